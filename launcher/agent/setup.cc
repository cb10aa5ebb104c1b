// Secrets, MLflow variables and the Python environment of one node (see launcher/agent/setup.h).
#include "launcher/agent/setup.h"

#include "core/base/error.h"
#include "core/secrets/client.h"
#include "launcher/agent/pyenv.h"

namespace air::launcher {

std::map<std::string, std::string> resolve_node_secrets(const api::NodeSpec& spec, const NodeAgentOptions& o) {
  if (spec.secrets.empty()) return {};
  std::vector<SecretBinding> bindings;
  for (const auto& s : spec.secrets) bindings.push_back({s.name, s.scope, s.key});
  SecretsClient client(WorkspaceEndpoint{o.server, o.token});
  return resolve_secrets(client, bindings);
}

std::map<std::string, std::string> mlflow_env(const api::NodeSpec& spec, const NodeAgentOptions& o) {
  std::map<std::string, std::string> out;
  if (spec.mlflow_run_id.empty()) return out;
  for (const auto& [k, v] : spec.env)
    if (k == "MLFLOW_TRACKING_URI") return out;  // the workload logs elsewhere: leave its settings alone
  out["MLFLOW_TRACKING_URI"] = o.server;
  out["MLFLOW_TRACKING_TOKEN"] = o.token;
  out["MLFLOW_RUN_ID"] = spec.mlflow_run_id;
  return out;
}

std::map<std::string, std::string> prepare_python_env(const api::NodeSpec& spec, const std::string& code_dir,
                                                      const std::string& air_home, const std::string& current_path,
                                                      const std::function<void(std::string_view)>& on_output) {
  if (spec.dependencies.empty()) return {};
  PyEnvSpec ps;
  ps.version = spec.environment_version;
  ps.dependencies = spec.dependencies;
  ps.work_dir = code_dir;
  PyEnvResult r = ensure_python_env(ps, air_home, on_output);
  if (!r.ok) throw Error(r.summary.empty() ? "installing environment.dependencies failed" : r.summary);
  return python_env_vars(r, current_path);
}

void overlay_env(std::vector<std::string>& env, const std::map<std::string, std::string>& extra) {
  for (const auto& [k, v] : extra) {
    bool found = false;
    for (auto& e : env) {
      if (e.size() > k.size() && e[k.size()] == '=' && e.compare(0, k.size(), k) == 0) {
        e = k + "=" + v;
        found = true;
      }
    }
    if (!found) env.push_back(k + "=" + v);
  }
}

std::string env_value(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e.size() > name.size() && e[name.size()] == '=' && e.compare(0, name.size(), name) == 0)
      return e.substr(name.size() + 1);
  return {};
}

}  // namespace air::launcher
