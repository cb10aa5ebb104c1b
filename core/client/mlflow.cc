// MlflowClient over the workspace client (core/client/client.h). Non-finite metric values travel as "NaN"/"Infinity" strings (proto3 JSON),
// which is what MLflow's own server accepts.
#include "core/client/mlflow.h"

#include <chrono>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/base/codec.h"
#include "core/client/client.h"

namespace air {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

nlohmann::json value_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

double value_of(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
    return std::strtod(s.c_str(), nullptr);
  }
  return std::nan("");
}

int64_t int_of(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return 0;
  if (it->is_number()) return it->get<int64_t>();
  if (it->is_string()) return std::strtoll(it->get_ref<const std::string&>().c_str(), nullptr, 10);
  return 0;
}

MetricPoint metric_of(const nlohmann::json& m) {
  return {m.value("key", ""), value_of(m.value("value", nlohmann::json())), int_of(m, "timestamp"), int_of(m, "step")};
}

nlohmann::json pairs_json(const Tags& kvs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [k, v] : kvs) a.push_back({{"key", k}, {"value", v}});
  return a;
}

}  // namespace

MlflowClient::MlflowClient(const std::string& tracking_uri, const std::string& token, long timeout_ms)
    : http_(std::make_unique<Client>(tracking_uri, token)), timeout_ms_(timeout_ms) {}

MlflowClient::~MlflowClient() = default;

std::unique_ptr<MlflowClient> MlflowClient::from_env() {
  const char* uri = std::getenv("MLFLOW_TRACKING_URI");
  if (!uri || (std::string(uri).rfind("http://", 0) != 0 && std::string(uri).rfind("https://", 0) != 0)) return nullptr;
  const char* token = std::getenv("MLFLOW_TRACKING_TOKEN");
  return std::make_unique<MlflowClient>(uri, token ? token : "");
}

std::string MlflowClient::call(const std::string& method, const std::string& path, const std::string& body) {
  HttpResponse r = http_->request(method, "/api/2.0/mlflow/" + path, body, method == "POST" ? "application/json" : "",
                                  timeout_ms_);
  if (r.status >= 200 && r.status < 300) return r.body;
  std::string code = "HTTP_" + std::to_string(r.status), message;
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object()) {
    if (j.contains("error_code") && j["error_code"].is_string()) code = j["error_code"];
    if (j.contains("message") && j["message"].is_string()) message = j["message"];
  }
  if (message.empty()) message = "the MLflow API answered HTTP " + std::to_string(r.status) + " to " + path;
  throw MlflowApiError(r.status, code, message);
}

std::string MlflowClient::get_or_create_experiment(const std::string& name) {
  try {
    auto j = nlohmann::json::parse(call("GET", "experiments/get-by-name?experiment_name=" + percent_encode(name), {}));
    return j["experiment"]["experiment_id"].get<std::string>();
  } catch (const MlflowApiError& e) {
    if (e.code() != "RESOURCE_DOES_NOT_EXIST") throw;
  }
  try {
    auto j = nlohmann::json::parse(call("POST", "experiments/create", nlohmann::json{{"name", name}}.dump()));
    return j["experiment_id"].get<std::string>();
  } catch (const MlflowApiError& e) {
    if (e.code() != "RESOURCE_ALREADY_EXISTS") throw;  // created meanwhile by another rank or node
  }
  auto j = nlohmann::json::parse(call("GET", "experiments/get-by-name?experiment_name=" + percent_encode(name), {}));
  return j["experiment"]["experiment_id"].get<std::string>();
}

std::string MlflowClient::create_run(const std::string& experiment_id, const std::string& run_name, const Tags& tags) {
  nlohmann::json body = {{"experiment_id", experiment_id}, {"start_time", now_ms()}, {"tags", pairs_json(tags)}};
  if (!run_name.empty()) body["run_name"] = run_name;
  auto j = nlohmann::json::parse(call("POST", "runs/create", body.dump()));
  return j["run"]["info"]["run_id"].get<std::string>();
}

void MlflowClient::log_metric(const std::string& run_id, const std::string& key, double value, int64_t step,
                              std::optional<int64_t> timestamp_ms) {
  call("POST", "runs/log-metric",
       nlohmann::json{{"run_id", run_id}, {"key", key}, {"value", value_json(value)},
                      {"timestamp", timestamp_ms.value_or(now_ms())}, {"step", step}}
           .dump());
}

void MlflowClient::log_param(const std::string& run_id, const std::string& key, const std::string& value) {
  call("POST", "runs/log-parameter", nlohmann::json{{"run_id", run_id}, {"key", key}, {"value", value}}.dump());
}

void MlflowClient::log_batch(const std::string& run_id, const std::vector<MetricPoint>& metrics, const Tags& params,
                             const Tags& tags) {
  nlohmann::json ms = nlohmann::json::array();
  for (const auto& m : metrics)
    ms.push_back({{"key", m.key}, {"value", value_json(m.value)},
                  {"timestamp", m.timestamp ? m.timestamp : now_ms()}, {"step", m.step}});
  call("POST", "runs/log-batch",
       nlohmann::json{{"run_id", run_id}, {"metrics", ms}, {"params", pairs_json(params)}, {"tags", pairs_json(tags)}}
           .dump());
}

void MlflowClient::update_run(const std::string& run_id, const std::string& status, std::optional<int64_t> end_time_ms) {
  nlohmann::json body = {{"run_id", run_id}, {"status", status}};
  if (end_time_ms) body["end_time"] = *end_time_ms;
  else if (status != "RUNNING") body["end_time"] = now_ms();
  call("POST", "runs/update", body.dump());
}

std::vector<MetricPoint> MlflowClient::latest_metrics(const std::string& run_id) {
  auto j = nlohmann::json::parse(call("GET", "runs/get?run_id=" + percent_encode(run_id), {}));
  std::vector<MetricPoint> out;
  const auto& data = j["run"]["data"];
  if (data.contains("metrics"))
    for (const auto& m : data["metrics"]) out.push_back(metric_of(m));
  return out;
}

std::vector<MetricPoint> MlflowClient::metric_history(const std::string& run_id, const std::string& key) {
  std::vector<MetricPoint> out;
  std::string token;
  do {
    std::string path = "metrics/get-history?run_id=" + percent_encode(run_id) + "&metric_key=" + percent_encode(key);
    if (!token.empty()) path += "&page_token=" + percent_encode(token);
    auto j = nlohmann::json::parse(call("GET", path, {}));
    if (j.contains("metrics"))
      for (const auto& m : j["metrics"]) out.push_back(metric_of(m));
    token = j.value("next_page_token", "");
  } while (!token.empty());
  return out;
}

}  // namespace air
