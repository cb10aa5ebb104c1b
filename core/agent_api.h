// Agent-side wire types of the workspace <-> node agent contract (/api/air/v1/runs/.../nodes/N/...).
// Lenient on the wire: unknown fields are ignored, missing ones keep their defaults. To be folded into
// core/api.h once that header lands.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace air {

struct AgentSecretRef {
  std::string name, scope, key;
};

// GET .../nodes/{n}/spec
struct NodeSpec {
  std::string run_id;
  int attempt = 0;
  int node_rank = 0;
  int num_nodes = 1;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string command;
  std::vector<std::pair<std::string, std::string>> env;  // env_variables only, sorted by name
  std::vector<AgentSecretRef> secrets;
  std::string parameters_yaml;
  std::string snapshot_digest;  // hex SHA-256, empty when the run has no snapshot
  bool gpu = false;
  uint64_t max_log_bytes = 0;  // 0: no limit
  std::vector<std::string> dependencies;  // environment.dependencies: pip requirements for a venv
  std::string environment_version;        // environment.version (part of the venv's key)
  std::string mlflow_run_id;              // the attempt's MLflow run: MLFLOW_RUN_ID ("" when none)
  std::string volumes_root;               // the volume storage, bound at /Volumes ("" when none)
  std::vector<std::string> volumes;       // "catalog/schema/volume" the workload names (made on first use)
};

// POST .../nodes/{n}/status
struct NodeStatusReport {
  std::string state;  // STARTING | RUNNING | SUCCEEDED | FAILED
  std::optional<int> exit_code;
  std::string message;
  std::optional<int> pid;
  std::vector<std::string> last_lines;
};

// Throws air::Error when a field has the wrong type (a workspace speaking another contract).
NodeSpec node_spec_from_json(const nlohmann::json& j);
nlohmann::json to_json(const NodeSpec& s);
nlohmann::json to_json(const NodeStatusReport& r);

// The status reply's "action": true when the workspace asks the agent to stop.
bool status_reply_says_stop(const nlohmann::json& reply);

// The error body's code ("LOG_GAP") or "" when the body is not an error body.
std::string error_code_of(const nlohmann::json& body);

}  // namespace air
