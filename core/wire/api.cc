// JSON mapping of the wire types. Reading is lenient: a missing or null field keeps its default.
#include "core/wire/api.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>

namespace air::api {

using nlohmann::json;

namespace {

// nlohmann converts a float to an integer type with a plain cast, which is undefined behaviour when the
// value does not fit (1e30 as uint64_t; found by fuzzing): such a field is refused as a type error (400).
template <typename T>
T value_of(const json& v, const char* key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (!(d >= static_cast<double>(std::numeric_limits<T>::min()) &&
            d < std::ldexp(1.0, std::numeric_limits<T>::digits)))
        throw json::type_error::create(302, std::string("field '") + key + "' is out of range", &v);
    }
  }
  return v.get<T>();
}

template <typename T>
void get(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) out = value_of<T>(*it, key);
}

template <typename T>
void get_opt(const json& j, const char* key, std::optional<T>& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) out = value_of<T>(*it, key);
}

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

void to_json(json& j, const ErrorBody& v) {
  json ds = json::array();
  for (const auto& d : v.diagnostics) ds.push_back(air::to_json(d));
  j = json{{"code", v.code}, {"message", v.message}, {"diagnostics", ds}};
}
void from_json(const json& j, ErrorBody& v) {
  get(j, "code", v.code);
  get(j, "message", v.message);
  if (auto it = j.find("diagnostics"); it != j.end() && it->is_array())
    for (const auto& d : *it) v.diagnostics.push_back(air::diagnostic_from_json(d));
}

void to_json(json& j, const SubmitRequest& v) {
  j = json{{"workload_yaml", v.workload_yaml},     {"file_name", v.file_name},
           {"base_dir", v.base_dir},               {"snapshot_digest", v.snapshot_digest},
           {"snapshot_bytes", v.snapshot_bytes},   {"idempotency_key", v.idempotency_key}};
}
void from_json(const json& j, SubmitRequest& v) {
  get(j, "workload_yaml", v.workload_yaml);
  get(j, "file_name", v.file_name);
  get(j, "base_dir", v.base_dir);
  get(j, "snapshot_digest", v.snapshot_digest);
  get(j, "snapshot_bytes", v.snapshot_bytes);
  get(j, "idempotency_key", v.idempotency_key);
}

void to_json(json& j, const Metric& v) {
  json value = v.value;
  if (std::isnan(v.value)) value = "NaN";
  else if (std::isinf(v.value)) value = v.value > 0 ? "Infinity" : "-Infinity";
  j = json{{"key", v.key}, {"value", value}, {"timestamp", v.timestamp}, {"step", v.step}};
}
void from_json(const json& j, Metric& v) {
  get(j, "key", v.key);
  if (auto it = j.find("value"); it != j.end()) {
    if (it->is_number()) v.value = it->get<double>();
    else if (it->is_string()) v.value = *it == "Infinity" ? INFINITY : *it == "-Infinity" ? -INFINITY : NAN;
  }
  get(j, "timestamp", v.timestamp);
  get(j, "step", v.step);
}

void to_json(json& j, const NodeInfo& v) {
  j = json{{"rank", v.rank},   {"state", v.state}, {"exit_code", opt(v.exit_code)}, {"message", v.message},
           {"pid", opt(v.pid)}, {"gpus", v.gpus},  {"log_bytes", v.log_bytes},
           {"running_at_ms", v.running_at_ms}, {"host", v.host}};
}
void from_json(const json& j, NodeInfo& v) {
  get(j, "rank", v.rank);
  get(j, "state", v.state);
  get_opt(j, "exit_code", v.exit_code);
  get(j, "message", v.message);
  get_opt(j, "pid", v.pid);
  get(j, "gpus", v.gpus);
  get(j, "log_bytes", v.log_bytes);
  get(j, "running_at_ms", v.running_at_ms);
  get(j, "host", v.host);
}

void to_json(json& j, const AttemptInfo& v) {
  j = json{{"number", v.number},
           {"state", v.state},
           {"master_port", v.master_port},
           {"started_at_ms", v.started_at_ms},
           {"ended_at_ms", v.ended_at_ms},
           {"failing_node", opt(v.failing_node)},
           {"failing_exit_code", opt(v.failing_exit_code)},
           {"failing_lines", v.failing_lines},
           {"reason", v.reason},
           {"job_id", v.job_id},
           {"nodes", v.nodes},
           {"mlflow_run_id", v.mlflow_run_id},
           {"metrics", v.metrics}};
}
void from_json(const json& j, AttemptInfo& v) {
  get(j, "number", v.number);
  get(j, "state", v.state);
  get(j, "master_port", v.master_port);
  get(j, "started_at_ms", v.started_at_ms);
  get(j, "ended_at_ms", v.ended_at_ms);
  get_opt(j, "failing_node", v.failing_node);
  get_opt(j, "failing_exit_code", v.failing_exit_code);
  get(j, "failing_lines", v.failing_lines);
  get(j, "reason", v.reason);
  get(j, "job_id", v.job_id);
  get(j, "nodes", v.nodes);
  get(j, "mlflow_run_id", v.mlflow_run_id);
  get(j, "metrics", v.metrics);
}

void to_json(json& j, const VolumeUsage& v) {
  j = json{{"path", v.path}, {"files", v.files}, {"bytes", v.bytes}, {"exists", v.exists}};
}
void from_json(const json& j, VolumeUsage& v) {
  get(j, "path", v.path);
  get(j, "files", v.files);
  get(j, "bytes", v.bytes);
  get(j, "exists", v.exists);
}

void to_json(json& j, const RunInfo& v) {
  j = json{{"run_id", v.run_id},
           {"experiment_name", v.experiment_name},
           {"state", v.state},
           {"status_message", v.status_message},
           {"accelerator_type", v.accelerator_type},
           {"num_accelerators", v.num_accelerators},
           {"accelerators_per_node", v.accelerators_per_node},
           {"num_nodes", v.num_nodes},
           {"gpu", v.gpu},
           {"max_retries", v.max_retries},
           {"timeout_minutes", opt(v.timeout_minutes)},
           {"stall_timeout_minutes", opt(v.stall_timeout_minutes)},
           {"submitted_at_ms", v.submitted_at_ms},
           {"started_at_ms", v.started_at_ms},
           {"ended_at_ms", v.ended_at_ms},
           {"snapshot_digest", v.snapshot_digest},
           {"snapshot_bytes", v.snapshot_bytes},
           {"file_name", v.file_name},
           {"workload_yaml", v.workload_yaml},
           {"idempotency_key", v.idempotency_key},
           {"current_attempt", v.current_attempt},
           {"attempts", v.attempts},
           {"volumes", v.volumes},
           {"notices", v.notices}};
}
void from_json(const json& j, RunInfo& v) {
  get(j, "run_id", v.run_id);
  get(j, "experiment_name", v.experiment_name);
  get(j, "state", v.state);
  get(j, "status_message", v.status_message);
  get(j, "accelerator_type", v.accelerator_type);
  get(j, "num_accelerators", v.num_accelerators);
  get(j, "accelerators_per_node", v.accelerators_per_node);
  get(j, "num_nodes", v.num_nodes);
  get(j, "gpu", v.gpu);
  get(j, "max_retries", v.max_retries);
  get_opt(j, "timeout_minutes", v.timeout_minutes);
  get_opt(j, "stall_timeout_minutes", v.stall_timeout_minutes);
  get(j, "submitted_at_ms", v.submitted_at_ms);
  get(j, "started_at_ms", v.started_at_ms);
  get(j, "ended_at_ms", v.ended_at_ms);
  get(j, "snapshot_digest", v.snapshot_digest);
  get(j, "snapshot_bytes", v.snapshot_bytes);
  get(j, "file_name", v.file_name);
  get(j, "workload_yaml", v.workload_yaml);
  get(j, "idempotency_key", v.idempotency_key);
  get(j, "current_attempt", v.current_attempt);
  get(j, "attempts", v.attempts);
  get(j, "volumes", v.volumes);
  get(j, "notices", v.notices);
}

void to_json(json& j, const RunList& v) { j = json{{"runs", v.runs}}; }
void from_json(const json& j, RunList& v) { get(j, "runs", v.runs); }

void to_json(json& j, const CancelReply& v) {
  j = json{{"run_id", v.run_id}, {"state", v.state}, {"already_terminal", v.already_terminal}};
}
void from_json(const json& j, CancelReply& v) {
  get(j, "run_id", v.run_id);
  get(j, "state", v.state);
  get(j, "already_terminal", v.already_terminal);
}

void to_json(json& j, const NodeSpec& v) {
  json env = json::object();
  for (const auto& [k, val] : v.env) env[k] = val;
  json secrets = json::array();
  for (const auto& s : v.secrets) secrets.push_back({{"name", s.name}, {"scope", s.scope}, {"key", s.key}});
  j = json{{"run_id", v.run_id},
           {"attempt", v.attempt},
           {"node_rank", v.node_rank},
           {"num_nodes", v.num_nodes},
           {"local_world_size", v.local_world_size},
           {"master_addr", v.master_addr},
           {"master_port", v.master_port},
           {"command", v.command},
           {"env", env},
           {"env_order", [&] {
              json o = json::array();
              for (const auto& kv : v.env) o.push_back(kv.first);
              return o;
            }()},
           {"secrets", secrets},
           {"parameters_yaml", v.parameters_yaml},
           {"snapshot_digest", v.snapshot_digest},
           {"gpu", v.gpu},
           {"max_log_bytes", v.max_log_bytes},
           {"dependencies", v.dependencies},
           {"environment_version", v.environment_version},
           {"mlflow_run_id", v.mlflow_run_id},
           {"max_unpack_bytes", v.max_unpack_bytes},
           {"max_unpack_entries", v.max_unpack_entries},
           {"volumes_root", v.volumes_root},
           {"volumes", v.volumes}};
}
void from_json(const json& j, NodeSpec& v) {
  get(j, "run_id", v.run_id);
  get(j, "attempt", v.attempt);
  get(j, "node_rank", v.node_rank);
  get(j, "num_nodes", v.num_nodes);
  get(j, "local_world_size", v.local_world_size);
  get(j, "master_addr", v.master_addr);
  get(j, "master_port", v.master_port);
  get(j, "command", v.command);
  if (auto it = j.find("env"); it != j.end() && it->is_object()) {
    std::vector<std::string> order;
    get(j, "env_order", order);
    if (order.size() != it->size()) {
      order.clear();
      for (auto e = it->begin(); e != it->end(); ++e) order.push_back(e.key());
    }
    for (const auto& k : order) v.env.emplace_back(k, it->value(k, std::string()));
  }
  if (auto it = j.find("secrets"); it != j.end() && it->is_array())
    for (const auto& s : *it)
      v.secrets.push_back({s.value("name", ""), s.value("scope", ""), s.value("key", "")});
  get(j, "parameters_yaml", v.parameters_yaml);
  get(j, "snapshot_digest", v.snapshot_digest);
  get(j, "gpu", v.gpu);
  get(j, "max_log_bytes", v.max_log_bytes);
  get(j, "dependencies", v.dependencies);
  get(j, "environment_version", v.environment_version);
  get(j, "mlflow_run_id", v.mlflow_run_id);
  get(j, "max_unpack_bytes", v.max_unpack_bytes);
  get(j, "max_unpack_entries", v.max_unpack_entries);
  get(j, "volumes_root", v.volumes_root);
  get(j, "volumes", v.volumes);
}

void to_json(json& j, const NodeStatusReport& v) {
  j = json{{"state", v.state},   {"exit_code", opt(v.exit_code)}, {"message", v.message},
           {"pid", opt(v.pid)}, {"last_lines", v.last_lines}, {"host", v.host}};
}
void from_json(const json& j, NodeStatusReport& v) {
  get(j, "state", v.state);
  get_opt(j, "exit_code", v.exit_code);
  get(j, "message", v.message);
  get_opt(j, "pid", v.pid);
  get(j, "last_lines", v.last_lines);
  get(j, "host", v.host);
}

void to_json(json& j, const NodeStatusReply& v) { j = json{{"action", v.action}}; }
void from_json(const json& j, NodeStatusReply& v) { get(j, "action", v.action); }

void to_json(json& j, const LogAppendReply& v) { j = json{{"size", v.size}}; }
void from_json(const json& j, LogAppendReply& v) { get(j, "size", v.size); }

void to_json(json& j, const Health& v) { j = json{{"status", v.status}, {"version", v.version}, {"pid", v.pid}}; }
void from_json(const json& j, Health& v) {
  get(j, "status", v.status);
  get(j, "version", v.version);
  get(j, "pid", v.pid);
}

LogLine parse_log_line(std::string_view line) {
  LogLine out;
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  auto sp = line.find(' ');
  int64_t t = 0;
  if (sp != std::string_view::npos && sp > 0 && sp + 2 <= line.size() &&
      (line[sp + 1] == 'o' || line[sp + 1] == 'e') && (sp + 2 == line.size() || line[sp + 2] == ' ')) {
    auto [p, ec] = std::from_chars(line.data(), line.data() + sp, t);
    if (ec == std::errc() && p == line.data() + sp) {
      out.time_ms = t;
      out.stream = line[sp + 1];
      out.text = sp + 3 <= line.size() ? std::string(line.substr(sp + 3)) : std::string();
      return out;
    }
  }
  out.text = std::string(line);
  return out;
}

}  // namespace air::api
