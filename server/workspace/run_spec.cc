// RunSpec's stored JSON (server/workspace/run_spec.h).
#include "server/workspace/run_spec.h"

#include <nlohmann/json.hpp>

#include "core/volumes/path.h"
#include "server/workspace/errors.h"

namespace air::server {

using nlohmann::json;

std::string RunSpec::to_json() const {
  json env = json::array();
  for (const auto& [k, v] : node.env) env.push_back({k, v});
  json secrets = json::array();
  for (const auto& s : node.secrets) secrets.push_back({{"name", s.name}, {"scope", s.scope}, {"key", s.key}});
  return json{{"command", node.command},
              {"env", env},
              {"parameters_yaml", node.parameters_yaml},
              {"local_world_size", node.local_world_size},
              {"gpu", node.gpu},
              {"secrets", secrets},
              {"dependencies", node.dependencies},
              {"environment_version", node.environment_version},
              {"mlflow_run_name", mlflow_run_name},
              {"usage_policy_name", usage_policy_name},
              {"system_metrics_interval_s", node.system_metrics_interval_s},
              {"step_pattern", node.step_pattern},
              {"snapshot_path", node.snapshot_path}}
      .dump();
}

RunSpec RunSpec::parse(const std::string& text) {
  RunSpec s;
  try {
    json t = json::parse(text);
    s.node.command = t.value("command", "");
    for (const auto& kv : t.value("env", json::array()))
      s.node.env.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
    s.node.parameters_yaml = t.value("parameters_yaml", "");
    s.node.local_world_size = t.value("local_world_size", 1);
    s.node.gpu = t.value("gpu", false);
    for (const auto& x : t.value("secrets", json::array()))
      s.node.secrets.push_back({x.value("name", ""), x.value("scope", ""), x.value("key", "")});
    s.node.dependencies = t.value("dependencies", std::vector<std::string>{});
    s.node.environment_version = t.value("environment_version", "");
    s.node.snapshot_path = t.value("snapshot_path", "");
    s.node.system_metrics_interval_s = t.value("system_metrics_interval_s", 10.0);
    s.node.step_pattern = t.value("step_pattern", "");
    s.mlflow_run_name = t.value("mlflow_run_name", "");
    s.usage_policy_name = t.value("usage_policy_name", "");
  } catch (const json::exception& e) {
    throw HttpError(500, "INTERNAL", std::string("a stored run spec is not readable: ") + e.what());
  }
  return s;
}

std::vector<std::string> RunSpec::named_volume_paths() const {
  std::string text = node.command + "\n" + node.parameters_yaml;
  for (const auto& kv : node.env) text += "\n" + kv.second;
  return volume_paths_in(text);
}

}  // namespace air::server
