// JSON mapping of the wire types: each type's fields are named once (fields() below). Reading is lenient:
// a missing or null field keeps its default, unknown fields are ignored.
#include "core/wire/api.h"

#include <cmath>
#include <limits>
#include <concepts>
#include <type_traits>

namespace air::api {

using nlohmann::json;

std::string header_key(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string node_path(const std::string& run_id, int attempt, int node, std::string_view what) {
  return std::string(kPrefix) + "/runs/" + run_id + "/attempts/" + std::to_string(attempt) + "/nodes/" +
         std::to_string(node) + "/" + std::string(what);
}

namespace {

// Each wire type names its fields once, in fields(v, f): f(name, member[, codec]) for every field. to_json
// and from_json below walk the same list, so a field cannot be written under one name and read under another.
template <class V, class T>
concept Is = std::same_as<std::remove_const_t<V>, T>;

// Codecs for the few fields whose JSON is not nlohmann's default.
struct NonFinite {};  // a double that may be NaN or +-infinity, sent as "NaN", "Infinity", "-Infinity"
struct KeysOf {};     // write-only: the keys of an ordered env list, in order ("env_order")

template <class V> requires Is<V, ErrorBody>
void fields(V& v, auto&& f) {
  f("code", v.code);
  f("message", v.message);
  f("diagnostics", v.diagnostics);
}

template <class V> requires Is<V, SubmitRequest>
void fields(V& v, auto&& f) {
  f("workload_yaml", v.workload_yaml);
  f("file_name", v.file_name);
  f("base_dir", v.base_dir);
  f("snapshot_digest", v.snapshot_digest);
  f("snapshot_bytes", v.snapshot_bytes);
  f("idempotency_key", v.idempotency_key);
}

template <class V> requires Is<V, Metric>
void fields(V& v, auto&& f) {
  f("key", v.key);
  f("value", v.value, NonFinite{});
  f("timestamp", v.timestamp);
  f("step", v.step);
}

template <class V> requires Is<V, NodeInfo>
void fields(V& v, auto&& f) {
  f("rank", v.rank);
  f("state", v.state);
  f("exit_code", v.exit_code);
  f("message", v.message);
  f("pid", v.pid);
  f("gpus", v.gpus);
  f("log_bytes", v.log_bytes);
  f("running_at_ms", v.running_at_ms);
  f("host", v.host);
}

template <class V> requires Is<V, AttemptInfo>
void fields(V& v, auto&& f) {
  f("number", v.number);
  f("state", v.state);
  f("master_port", v.master_port);
  f("started_at_ms", v.started_at_ms);
  f("ended_at_ms", v.ended_at_ms);
  f("failing_node", v.failing_node);
  f("failing_exit_code", v.failing_exit_code);
  f("failing_lines", v.failing_lines);
  f("reason", v.reason);
  f("job_id", v.job_id);
  f("nodes", v.nodes);
  f("mlflow_run_id", v.mlflow_run_id);
  f("metrics", v.metrics);
}

template <class V> requires Is<V, VolumeUsage>
void fields(V& v, auto&& f) {
  f("path", v.path);
  f("files", v.files);
  f("bytes", v.bytes);
  f("exists", v.exists);
}

template <class V> requires Is<V, RunPermission>
void fields(V& v, auto&& f) {
  f("user_name", v.user_name);
  f("group_name", v.group_name);
  f("service_principal_name", v.service_principal_name);
  f("permission_level", v.permission_level);
}

template <class V> requires Is<V, RunInfo>
void fields(V& v, auto&& f) {
  f("run_id", v.run_id);
  f("user", v.user);
  f("permissions", v.permissions);
  f("experiment_name", v.experiment_name);
  f("state", v.state);
  f("status_message", v.status_message);
  f("accelerator_type", v.accelerator_type);
  f("num_accelerators", v.num_accelerators);
  f("accelerators_per_node", v.accelerators_per_node);
  f("num_nodes", v.num_nodes);
  f("gpu", v.gpu);
  f("max_retries", v.max_retries);
  f("timeout_minutes", v.timeout_minutes);
  f("stall_timeout_minutes", v.stall_timeout_minutes);
  f("straggler_minutes", v.straggler_minutes);
  f("alerts", v.alerts);
  f("submitted_at_ms", v.submitted_at_ms);
  f("started_at_ms", v.started_at_ms);
  f("ended_at_ms", v.ended_at_ms);
  f("snapshot_digest", v.snapshot_digest);
  f("snapshot_bytes", v.snapshot_bytes);
  f("file_name", v.file_name);
  f("workload_yaml", v.workload_yaml);
  f("idempotency_key", v.idempotency_key);
  f("current_attempt", v.current_attempt);
  f("attempts", v.attempts);
  f("volumes", v.volumes);
  f("notices", v.notices);
  f("pool_id", v.pool_id);
  f("priority_class", v.priority_class);
  f("queue_position", v.queue_position);
  f("queue_length", v.queue_length);
  f("gpus_reserved", v.gpus_reserved);
  f("estimated_start_ms", v.estimated_start_ms);
}

template <class V> requires Is<V, RunList>
void fields(V& v, auto&& f) {
  f("runs", v.runs);
}

template <class V> requires Is<V, CancelReply>
void fields(V& v, auto&& f) {
  f("run_id", v.run_id);
  f("state", v.state);
  f("already_terminal", v.already_terminal);
}

template <class V> requires Is<V, NodeSpec::Secret>
void fields(V& v, auto&& f) {
  f("name", v.name);
  f("scope", v.scope);
  f("key", v.key);
}

template <class V> requires Is<V, NodeSpec>
void fields(V& v, auto&& f) {
  f("run_id", v.run_id);
  f("attempt", v.attempt);
  f("node_rank", v.node_rank);
  f("num_nodes", v.num_nodes);
  f("local_world_size", v.local_world_size);
  f("master_addr", v.master_addr);
  f("master_port", v.master_port);
  f("command", v.command);
  f("env", v.env);  // an object; its order travels in env_order (JSON objects have none)
  f("env_order", v.env, KeysOf{});
  f("secrets", v.secrets);
  f("parameters_yaml", v.parameters_yaml);
  f("snapshot_digest", v.snapshot_digest);
  f("snapshot_path", v.snapshot_path);
  f("gpu", v.gpu);
  f("max_log_bytes", v.max_log_bytes);
  f("dependencies", v.dependencies);
  f("environment_version", v.environment_version);
  f("mlflow_run_id", v.mlflow_run_id);
  f("max_unpack_bytes", v.max_unpack_bytes);
  f("max_unpack_entries", v.max_unpack_entries);
  f("volumes_root", v.volumes_root);
  f("volumes", v.volumes);
  f("read_only_volumes", v.read_only_volumes);
  f("system_metrics_interval_s", v.system_metrics_interval_s);
  f("step_pattern", v.step_pattern);
}

template <class V> requires Is<V, NodeStatusReport>
void fields(V& v, auto&& f) {
  f("state", v.state);
  f("exit_code", v.exit_code);
  f("message", v.message);
  f("pid", v.pid);
  f("host", v.host);
  f("last_lines", v.last_lines);
  f("gpu_count", v.gpu_count);
  f("gpu_idle_ms", v.gpu_idle_ms);
  f("step", v.step);
}

template <class V> requires Is<V, RunAlert>
void fields(V& v, auto&& f) {
  f("attempt", v.attempt);
  f("node", v.node);
  f("kind", v.kind);
  f("message", v.message);
  f("at_ms", v.at_ms);
  f("active", v.active);
}

template <class V> requires Is<V, NodeStatusReply>
void fields(V& v, auto&& f) {
  f("action", v.action);
}

template <class V> requires Is<V, LogAppendReply>
void fields(V& v, auto&& f) {
  f("size", v.size);
}

template <class V> requires Is<V, Health>
void fields(V& v, auto&& f) {
  f("status", v.status);
  f("version", v.version);
  f("pid", v.pid);
}

using EnvList = std::vector<std::pair<std::string, std::string>>;

// Writing one member.
template <class T>
json out(const T& m) {
  return json(m);
}
template <class T>
json out(const std::optional<T>& m) {
  return m ? json(*m) : json(nullptr);
}
json out(const std::vector<Diagnostic>& ds) {
  json a = json::array();
  for (const auto& d : ds) a.push_back(air::to_json(d));
  return a;
}
json out(const std::vector<NodeSpec::Secret>& ss) {
  json a = json::array();
  for (const auto& s : ss) {
    json o = json::object();
    fields(s, [&](const char* k, const auto& m) { o[k] = out(m); });
    a.push_back(std::move(o));
  }
  return a;
}
json out(const EnvList& env) {
  json o = json::object();
  for (const auto& [k, val] : env) o[k] = val;
  return o;
}
json out(const EnvList& env, KeysOf) {
  json a = json::array();
  for (const auto& kv : env) a.push_back(kv.first);
  return a;
}
json out(NodeState s) { return to_string(s); }
json out(double d, NonFinite) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

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

// Reading one member: lenient, a missing or null field keeps its default. `j` is the whole object.
template <class T>
void in(const json& j, const char* key, T& m) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) m = value_of<T>(*it, key);
}
template <class T>
void in(const json& j, const char* key, std::optional<T>& m) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) m = value_of<T>(*it, key);
}
void in(const json& j, const char* key, std::vector<Diagnostic>& ds) {
  if (auto it = j.find(key); it != j.end() && it->is_array())
    for (const auto& d : *it) ds.push_back(air::diagnostic_from_json(d));
}
void in(const json& j, const char* key, std::vector<NodeSpec::Secret>& ss) {
  if (auto it = j.find(key); it != j.end() && it->is_array())
    for (const auto& o : *it) {
      if (!o.is_object()) throw json::type_error::create(302, "a secret must be an object", &o);
      NodeSpec::Secret s;
      fields(s, [&](const char* k, auto& m) { in(o, k, m); });
      ss.push_back(std::move(s));
    }
}
void in(const json& j, const char* key, EnvList& env) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return;
  std::vector<std::string> order;
  in(j, "env_order", order);
  if (order.size() != it->size()) {  // an older writer, or a broken order: the object's own (sorted) order
    order.clear();
    for (auto e = it->begin(); e != it->end(); ++e) order.push_back(e.key());
  }
  for (const auto& k : order) env.emplace_back(k, it->value(k, std::string()));
}
void in(const json&, const char*, EnvList&, KeysOf) {}  // read together with "env"
// A node state by its name; a name this build does not know is refused (400 from a route, a clear error in
// the CLI), not read as some other state.
void in(const json& j, const char* key, NodeState& s) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  std::optional<NodeState> v;
  if (it->is_string()) v = node_state_from_string(it->get_ref<const std::string&>());
  if (!v)
    throw json::type_error::create(302, std::string("field '") + key + "' is not a node state (PENDING, STARTING, "
                                                                       "RUNNING, SUCCEEDED, FAILED or LOST)", &*it);
  s = *v;
}
void in(const json& j, const char* key, double& d, NonFinite) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (it->is_number()) d = it->get<double>();
  else if (it->is_string()) d = *it == "Infinity" ? INFINITY : *it == "-Infinity" ? -INFINITY : NAN;
}

template <class T>
void write(json& j, const T& v) {
  j = json::object();
  fields(v, [&](const char* k, const auto& m, auto... codec) { j[k] = out(m, codec...); });
}
template <class T>
void read(const json& j, T& v) {
  fields(v, [&](const char* k, auto& m, auto... codec) { in(j, k, m, codec...); });
}

}  // namespace

#define AIR_WIRE_JSON(T)                                    \
  void to_json(json& j, const T& v) { write(j, v); }        \
  void from_json(const json& j, T& v) { read(j, v); }
AIR_WIRE_JSON(ErrorBody)
AIR_WIRE_JSON(SubmitRequest)
AIR_WIRE_JSON(Metric)
AIR_WIRE_JSON(NodeInfo)
AIR_WIRE_JSON(AttemptInfo)
AIR_WIRE_JSON(VolumeUsage)
AIR_WIRE_JSON(RunPermission)
AIR_WIRE_JSON(RunAlert)
AIR_WIRE_JSON(RunInfo)
AIR_WIRE_JSON(RunList)
AIR_WIRE_JSON(CancelReply)
AIR_WIRE_JSON(NodeSpec)
AIR_WIRE_JSON(NodeStatusReport)
AIR_WIRE_JSON(NodeStatusReply)
AIR_WIRE_JSON(LogAppendReply)
AIR_WIRE_JSON(Health)
#undef AIR_WIRE_JSON

}  // namespace air::api
