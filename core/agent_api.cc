// JSON mapping of the agent-side wire types (see core/agent_api.h and the agent contract).
#include "core/agent_api.h"

#include "core/error.h"

namespace air {

namespace {

template <typename T>
void read_field(const nlohmann::json& j, const char* name, T& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return;
  try {
    out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(std::string("node spec field '") + name + "' has the wrong type",
                "the workspace and this agent speak different versions of the API");
  }
}

}  // namespace

NodeSpec node_spec_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("node spec is not a JSON object");
  NodeSpec s;
  read_field(j, "run_id", s.run_id);
  read_field(j, "attempt", s.attempt);
  read_field(j, "node_rank", s.node_rank);
  read_field(j, "num_nodes", s.num_nodes);
  read_field(j, "local_world_size", s.local_world_size);
  read_field(j, "master_addr", s.master_addr);
  read_field(j, "master_port", s.master_port);
  read_field(j, "command", s.command);
  read_field(j, "parameters_yaml", s.parameters_yaml);
  read_field(j, "snapshot_digest", s.snapshot_digest);
  read_field(j, "gpu", s.gpu);
  read_field(j, "max_log_bytes", s.max_log_bytes);
  read_field(j, "dependencies", s.dependencies);
  read_field(j, "environment_version", s.environment_version);
  read_field(j, "mlflow_run_id", s.mlflow_run_id);
  read_field(j, "volumes_root", s.volumes_root);
  read_field(j, "volumes", s.volumes);
  if (auto it = j.find("env"); it != j.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) {
      s.env.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  if (auto it = j.find("secrets"); it != j.end() && it->is_array()) {
    for (const auto& e : *it) {
      AgentSecretRef r;
      read_field(e, "name", r.name);
      read_field(e, "scope", r.scope);
      read_field(e, "key", r.key);
      s.secrets.push_back(std::move(r));
    }
  }
  return s;
}

nlohmann::json to_json(const NodeSpec& s) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : s.env) env[k] = v;
  nlohmann::json secrets = nlohmann::json::array();
  for (const auto& r : s.secrets) secrets.push_back({{"name", r.name}, {"scope", r.scope}, {"key", r.key}});
  return {{"run_id", s.run_id},
          {"attempt", s.attempt},
          {"node_rank", s.node_rank},
          {"num_nodes", s.num_nodes},
          {"local_world_size", s.local_world_size},
          {"master_addr", s.master_addr},
          {"master_port", s.master_port},
          {"command", s.command},
          {"env", env},
          {"secrets", secrets},
          {"parameters_yaml", s.parameters_yaml},
          {"snapshot_digest", s.snapshot_digest},
          {"gpu", s.gpu},
          {"max_log_bytes", s.max_log_bytes},
          {"dependencies", s.dependencies},
          {"environment_version", s.environment_version},
          {"mlflow_run_id", s.mlflow_run_id},
          {"volumes_root", s.volumes_root},
          {"volumes", s.volumes}};
}

nlohmann::json to_json(const NodeStatusReport& r) {
  nlohmann::json j = {{"state", r.state}, {"message", r.message}};
  j["exit_code"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json(nullptr);
  j["pid"] = r.pid ? nlohmann::json(*r.pid) : nlohmann::json(nullptr);
  j["last_lines"] = r.last_lines;
  return j;
}

bool status_reply_says_stop(const nlohmann::json& reply) {
  if (!reply.is_object()) return false;
  auto it = reply.find("action");
  return it != reply.end() && it->is_string() && it->get<std::string>() == "stop";
}

std::string error_code_of(const nlohmann::json& body) {
  if (!body.is_object()) return "";
  auto e = body.find("error");
  if (e == body.end() || !e->is_object()) return "";
  auto c = e->find("code");
  return c != e->end() && c->is_string() ? c->get<std::string>() : "";
}

}  // namespace air
