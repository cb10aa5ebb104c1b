// The node agent's run-specific setup: the run's secrets (resolved through the secrets REST API with the
// node token), the attempt's MLflow variables, the Python environment for environment.dependencies. (The
// redaction of their values from the command's output is core/logs/framing.h's RedactingFramer.)
#pragma once
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/wire/api.h"
#include "launcher/agent/node_agent.h"

namespace air::launcher {

// Fetches every `secrets:` binding of the spec (name -> value). Throws air::Error listing every failing
// binding by name and scope/key, never a value.
std::map<std::string, std::string> resolve_node_secrets(const api::NodeSpec& spec, const NodeAgentOptions& options);

// MLFLOW_TRACKING_URI (the workspace), MLFLOW_TRACKING_TOKEN (the node token) and MLFLOW_RUN_ID, unless the
// workload's env_variables set them itself (for example to log to another tracking server).
std::map<std::string, std::string> mlflow_env(const api::NodeSpec& spec, const NodeAgentOptions& options);

// Finds or builds the virtual environment for spec.dependencies under $AIR_HOME/envs and returns PATH (its
// bin first, before `current_path`) and VIRTUAL_ENV; empty when the spec has no dependencies. venv's and
// pip's output goes to `on_output`. A failed install throws air::Error with pip's one-line summary.
std::map<std::string, std::string> prepare_python_env(const api::NodeSpec& spec, const std::string& code_dir,
                                                      const std::string& air_home, const std::string& current_path,
                                                      const std::function<void(std::string_view)>& on_output);

// Sets (or replaces) each NAME=value of `extra` in a "NAME=value" environment.
void overlay_env(std::vector<std::string>& env, const std::map<std::string, std::string>& extra);
// The value of NAME in a "NAME=value" environment ("" when absent).
std::string env_value(const std::vector<std::string>& env, const std::string& name);

}  // namespace air::launcher
