// A small MLflow tracking client (libcurl) for air-train and tests: experiments, runs, metrics, params.
// Talks to any server with MLflow's REST API: the air workspace, or an MLflow tracking server.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.h"

namespace air {

class Client;

class MlflowApiError : public Error {
 public:
  MlflowApiError(long http_status, std::string code, std::string message)
      : Error(std::move(message)), http_status_(http_status), code_(std::move(code)) {}
  long http_status() const { return http_status_; }
  const std::string& code() const { return code_; }

 private:
  long http_status_;
  std::string code_;
};

struct MetricPoint {
  std::string key;
  double value = 0;
  int64_t timestamp = 0;  // ms since the epoch
  int64_t step = 0;
};

using Tags = std::vector<std::pair<std::string, std::string>>;

class MlflowClient {
 public:
  // tracking_uri: "http://127.0.0.1:8470" (MLFLOW_TRACKING_URI); token: MLFLOW_TRACKING_TOKEN (may be empty).
  MlflowClient(const std::string& tracking_uri, const std::string& token, long timeout_ms = 30000);
  ~MlflowClient();
  // From MLFLOW_TRACKING_URI / MLFLOW_TRACKING_TOKEN; nullopt when no http(s) tracking URI is set.
  static std::unique_ptr<MlflowClient> from_env();

  std::string get_or_create_experiment(const std::string& name);
  std::string create_run(const std::string& experiment_id, const std::string& run_name = {}, const Tags& tags = {});
  void log_metric(const std::string& run_id, const std::string& key, double value, int64_t step,
                  std::optional<int64_t> timestamp_ms = std::nullopt);
  void log_param(const std::string& run_id, const std::string& key, const std::string& value);
  void log_batch(const std::string& run_id, const std::vector<MetricPoint>& metrics, const Tags& params = {},
                 const Tags& tags = {});
  // status: RUNNING, FINISHED, FAILED, KILLED.
  void update_run(const std::string& run_id, const std::string& status, std::optional<int64_t> end_time_ms = std::nullopt);
  // The latest value of each metric of a run (runs/get's data.metrics).
  std::vector<MetricPoint> latest_metrics(const std::string& run_id);
  // The full history of one metric (follows next_page_token).
  std::vector<MetricPoint> metric_history(const std::string& run_id, const std::string& key);

 private:
  std::string call(const std::string& method, const std::string& path, const std::string& body);
  std::unique_ptr<Client> http_;
  long timeout_ms_;
};

}  // namespace air
