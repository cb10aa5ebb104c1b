// MLflow REST handler over MlflowStore. Lenient on the wire like MLflow's own server: int64 fields come as
// numbers or as strings (proto3 JSON), metric values as numbers or "NaN"/"Infinity"/"-Infinity".
#include "server/api/mlflow.h"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace air::server {

namespace {

constexpr std::string_view kPrefix = "/api/2.0/mlflow/";

struct BadRequest {
  std::string message;
};

int status_for(const std::string& code) {
  if (code == "RESOURCE_DOES_NOT_EXIST") return 404;
  return 400;
}

const nlohmann::json* field(const nlohmann::json& p, const char* name) {
  auto it = p.find(name);
  return it == p.end() || it->is_null() ? nullptr : &*it;
}

std::string str(const nlohmann::json& p, const char* name, bool required) {
  const auto* f = field(p, name);
  if (!f) {
    if (required) throw BadRequest{fmt::format("Missing value for required parameter '{}'.", name)};
    return {};
  }
  if (!f->is_string()) throw BadRequest{fmt::format("Invalid value for parameter '{}': expected a string", name)};
  return f->get<std::string>();
}

std::optional<int64_t> i64(const nlohmann::json& p, const char* name, bool required) {
  const auto* f = field(p, name);
  if (!f) {
    if (required) throw BadRequest{fmt::format("Missing value for required parameter '{}'.", name)};
    return std::nullopt;
  }
  if (f->is_number_integer()) return f->get<int64_t>();
  // A whole float within int64's range only: casting 1e30 to int64_t is undefined behaviour (found by fuzzing).
  if (f->is_number_float() && std::floor(f->get<double>()) == f->get<double>() &&
      std::fabs(f->get<double>()) < 9.2e18)
    return static_cast<int64_t>(f->get<double>());
  if (f->is_string()) {
    const std::string& s = f->get_ref<const std::string&>();
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end && *end == '\0') return v;
  }
  throw BadRequest{fmt::format("Invalid value for parameter '{}': expected an integer", name)};
}

double metric_value(const nlohmann::json& p) {
  const auto* f = field(p, "value");
  if (!f) throw BadRequest{"Missing value for required parameter 'value'."};
  if (f->is_number()) return f->get<double>();
  if (f->is_string()) {
    const std::string& s = f->get_ref<const std::string&>();
    if (s == "NaN" || s == "nan") return std::nan("");
    if (s == "Infinity" || s == "inf") return INFINITY;
    if (s == "-Infinity" || s == "-inf") return -INFINITY;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0') return v;
  }
  throw BadRequest{"Invalid value for parameter 'value': expected a number"};
}

// MLflow accepts run_uuid as the older name of run_id.
std::string run_id_of(const nlohmann::json& p) {
  std::string id = str(p, "run_id", false);
  if (id.empty()) id = str(p, "run_uuid", false);
  if (id.empty()) throw BadRequest{"Missing value for required parameter 'run_id'."};
  return id;
}

MlflowMetric parse_metric(const nlohmann::json& m) {
  if (!m.is_object()) throw BadRequest{"Invalid metric: expected an object"};
  return {str(m, "key", true), metric_value(m), *i64(m, "timestamp", true), i64(m, "step", false).value_or(0)};
}

KeyValues parse_key_values(const nlohmann::json& p, const char* name) {
  KeyValues out;
  const auto* f = field(p, name);
  if (!f) return out;
  if (!f->is_array()) throw BadRequest{fmt::format("Invalid value for parameter '{}': expected a list", name)};
  for (const auto& kv : *f) {
    if (!kv.is_object()) throw BadRequest{fmt::format("Invalid entry in '{}': expected an object", name)};
    out.emplace_back(str(kv, "key", true), str(kv, "value", true));
  }
  return out;
}

nlohmann::json key_values_json(const KeyValues& kvs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [k, v] : kvs) a.push_back({{"key", k}, {"value", v}});
  return a;
}

nlohmann::json run_info_json(const MlflowRunInfo& i) {
  nlohmann::json j = {{"run_id", i.run_id},         {"run_uuid", i.run_id},       {"run_name", i.run_name},
                      {"experiment_id", i.experiment_id}, {"user_id", i.user_id}, {"status", i.status},
                      {"start_time", i.start_time}, {"artifact_uri", i.artifact_uri},
                      {"lifecycle_stage", i.lifecycle_stage}};
  if (i.end_time) j["end_time"] = *i.end_time;
  return j;
}

nlohmann::json experiment_json(const MlflowExperiment& e) {
  return {{"experiment_id", e.experiment_id},     {"name", e.name},
          {"artifact_location", e.artifact_location}, {"lifecycle_stage", e.lifecycle_stage},
          {"creation_time", e.creation_time},     {"last_update_time", e.last_update_time},
          {"tags", key_values_json(e.tags)}};
}

ApiReply history(MlflowStore& store, const nlohmann::json& p) {
  std::string run_id = run_id_of(p), key = str(p, "metric_key", true);
  int64_t max_results = i64(p, "max_results", false).value_or(25000);
  if (max_results <= 0 || max_results > 25000)
    throw BadRequest{"Invalid value for parameter 'max_results': use 1 to 25000"};
  int64_t offset = 0;
  if (std::string token = str(p, "page_token", false); !token.empty()) {
    char* end = nullptr;
    offset = std::strtoll(token.c_str(), &end, 10);
    if (!end || *end != '\0' || offset < 0) throw BadRequest{"Invalid page_token"};
  }
  bool more = false;
  auto metrics = store.metric_history(run_id, key, static_cast<size_t>(offset), static_cast<size_t>(max_results), &more);
  nlohmann::json a = nlohmann::json::array();
  for (const auto& m : metrics) a.push_back(metric_to_json(m));
  nlohmann::json out = {{"metrics", a}};
  if (more) out["next_page_token"] = std::to_string(offset + max_results);
  return {200, out};
}

ApiReply dispatch(MlflowStore& store, const std::string& op, const nlohmann::json& p) {
  if (op == "experiments/get-by-name") {
    std::string name = str(p, "experiment_name", true);
    auto e = store.experiment_by_name(name);
    if (!e) throw MlflowError("RESOURCE_DOES_NOT_EXIST", fmt::format("Could not find experiment with name '{}'", name));
    return {200, {{"experiment", experiment_json(*e)}}};
  }
  if (op == "experiments/get") return {200, {{"experiment", experiment_json(store.experiment(str(p, "experiment_id", true)))}}};
  if (op == "experiments/create")
    return {200, {{"experiment_id", store.create_experiment(str(p, "name", true), str(p, "artifact_location", false),
                                                             parse_key_values(p, "tags"))}}};
  if (op == "runs/create") {
    auto run = store.create_run(str(p, "experiment_id", false).empty() ? "0" : str(p, "experiment_id", false),
                                str(p, "run_name", false), str(p, "user_id", false), i64(p, "start_time", false),
                                parse_key_values(p, "tags"));
    return {200, {{"run", run_to_json(run)}}};
  }
  if (op == "runs/get") return {200, {{"run", run_to_json(store.get_run(run_id_of(p)))}}};
  if (op == "runs/update") {
    std::optional<std::string> status, name;
    if (field(p, "status")) status = str(p, "status", true);
    if (field(p, "run_name")) name = str(p, "run_name", true);
    return {200, {{"run_info", run_info_json(store.update_run(run_id_of(p), status, i64(p, "end_time", false), name))}}};
  }
  if (op == "runs/log-metric") {
    store.log_batch(run_id_of(p), {parse_metric(p)}, {}, {});
    return {};
  }
  if (op == "runs/log-parameter") {
    store.log_batch(run_id_of(p), {}, {{str(p, "key", true), str(p, "value", true)}}, {});
    return {};
  }
  if (op == "runs/set-tag") {
    store.log_batch(run_id_of(p), {}, {}, {{str(p, "key", true), str(p, "value", true)}});
    return {};
  }
  if (op == "runs/log-batch") {
    std::vector<MlflowMetric> metrics;
    if (const auto* m = field(p, "metrics")) {
      if (!m->is_array()) throw BadRequest{"Invalid value for parameter 'metrics': expected a list"};
      for (const auto& x : *m) metrics.push_back(parse_metric(x));
    }
    store.log_batch(run_id_of(p), metrics, parse_key_values(p, "params"), parse_key_values(p, "tags"));
    return {};
  }
  // op == "metrics/get-history"
  return history(store, p);
}

bool is_get(const std::string& op) {
  return op == "experiments/get-by-name" || op == "experiments/get" || op == "runs/get" || op == "metrics/get-history";
}

bool known(const std::string& op) {
  for (const char* o : {"experiments/get-by-name", "experiments/get", "experiments/create", "runs/create", "runs/get",
                        "runs/update", "runs/log-metric", "runs/log-parameter", "runs/set-tag", "runs/log-batch",
                        "metrics/get-history"})
    if (op == o) return true;
  return false;
}

}  // namespace

bool is_mlflow_path(const std::string& path) { return path.rfind(kPrefix, 0) == 0; }

std::optional<nlohmann::json> mlflow_params(const std::string& target, const std::string& body) {
  nlohmann::json p = nlohmann::json::object();
  if (!body.empty()) {
    p = nlohmann::json::parse(body, nullptr, false);
    if (p.is_discarded() || !p.is_object()) return std::nullopt;
  }
  for (const auto& [k, v] : query_params(target))
    if (!p.contains(k)) p[k] = v;
  return p;
}

std::string mlflow_run_named(const std::string& target, const std::string& body) {
  auto p = mlflow_params(target, body);
  if (!p) return {};
  try {
    return run_id_of(*p);
  } catch (const BadRequest&) {
    return {};
  }
}

nlohmann::json metric_to_json(const MlflowMetric& m) {
  nlohmann::json v;
  if (std::isnan(m.value)) v = "NaN";
  else if (std::isinf(m.value)) v = m.value > 0 ? "Infinity" : "-Infinity";
  else v = m.value;
  return {{"key", m.key}, {"value", v}, {"timestamp", m.timestamp}, {"step", m.step}};
}

nlohmann::json run_to_json(const MlflowRun& r) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& m : r.metrics) metrics.push_back(metric_to_json(m));
  return {{"info", run_info_json(r.info)},
          {"data", {{"metrics", metrics}, {"params", key_values_json(r.params)}, {"tags", key_values_json(r.tags)}}},
          {"inputs", nlohmann::json::object()}};
}

ApiReply handle_mlflow_request(MlflowStore& store, const std::string& method, const std::string& path,
                               const std::string& body, bool authenticated) {
  std::string bare = path_without_query(path);
  if (!is_mlflow_path(bare)) return error_reply(404, "ENDPOINT_NOT_FOUND", "not an MLflow API path");
  std::string op = bare.substr(kPrefix.size());
  if (!known(op)) return error_reply(404, "ENDPOINT_NOT_FOUND", fmt::format("No API found for '{}'", bare));
  std::string want = is_get(op) ? "GET" : "POST";
  if (method != want) return error_reply(405, "BAD_REQUEST", fmt::format("use {} for {}", want, bare));
  if (!authenticated) return error_reply(401, "UNAUTHENTICATED", "a valid access token is required");
  try {
    auto p = mlflow_params(path, body);
    if (!p) return error_reply(400, "MALFORMED_REQUEST", "the request body is not a JSON object");
    return dispatch(store, op, *p);
  } catch (const BadRequest& e) {
    return error_reply(400, "INVALID_PARAMETER_VALUE", e.message);
  } catch (const MlflowError& e) {
    return error_reply(status_for(e.code()), e.code(), e.what());
  } catch (const std::exception& e) {
    return error_reply(500, "INTERNAL_ERROR", e.what());
  }
}

}  // namespace air::server
