// The MLflow tracking subset the workspace serves (experiments, runs, params, tags, metric history),
// stored in the workspace's SQLite database. Also the helpers `air get run` uses: the latest value of each
// metric of a run, and each metric's history.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.h"

namespace air::server {

namespace sql { class Db; }

// Creates the MLflow tables when missing (additive, idempotent).
void migrate_mlflow(sqlite3* db);

// A failure with an MLflow error code: RESOURCE_DOES_NOT_EXIST, RESOURCE_ALREADY_EXISTS,
// INVALID_PARAMETER_VALUE.
class MlflowError : public Error {
 public:
  MlflowError(std::string code, std::string message) : Error(std::move(message)), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

struct MlflowMetric {
  std::string key;
  double value = 0;  // may be NaN or +-infinity
  int64_t timestamp = 0;  // ms
  int64_t step = 0;
};

using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct MlflowExperiment {
  std::string experiment_id, name, artifact_location, lifecycle_stage;
  int64_t creation_time = 0, last_update_time = 0;
  KeyValues tags;
};

struct MlflowRunInfo {
  std::string run_id, experiment_id, run_name, user_id, status, artifact_uri, lifecycle_stage;
  int64_t start_time = 0;
  std::optional<int64_t> end_time;
};

struct MlflowRun {
  MlflowRunInfo info;
  std::vector<MlflowMetric> metrics;  // latest value of each metric, by key
  KeyValues params, tags;             // by key
};

// MLflow's documented limits for log-batch and values.
constexpr size_t kMaxBatchMetrics = 1000, kMaxBatchParams = 100, kMaxBatchTags = 100, kMaxBatchTotal = 1000;
constexpr size_t kMaxParamValueLength = 6000, kMaxTagValueLength = 8000, kMaxEntityKeyLength = 250;

class MlflowStore {
 public:
  // Opens its own connection to the workspace database and creates the tables when missing.
  explicit MlflowStore(const std::string& db_path);
  ~MlflowStore();

  std::string create_experiment(const std::string& name, const std::string& artifact_location = {},
                                const KeyValues& tags = {});
  std::optional<MlflowExperiment> experiment_by_name(const std::string& name);
  MlflowExperiment experiment(const std::string& experiment_id);
  // For the workspace: the experiment named by a workload's experiment_name, created on first use.
  std::string get_or_create_experiment(const std::string& name);

  MlflowRun create_run(const std::string& experiment_id, const std::string& run_name = {},
                       const std::string& user_id = {}, std::optional<int64_t> start_time = {},
                       const KeyValues& tags = {});
  MlflowRun get_run(const std::string& run_id);
  MlflowRunInfo update_run(const std::string& run_id, const std::optional<std::string>& status,
                           std::optional<int64_t> end_time, const std::optional<std::string>& run_name);
  // Metrics, params and tags in one transaction (log-metric, log-parameter and set-tag are batches of one).
  void log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics, const KeyValues& params,
                 const KeyValues& tags);

  // History of one metric ordered by step then timestamp; `offset`/`limit` page through it. *more is set
  // when rows remain after this page.
  std::vector<MlflowMetric> metric_history(const std::string& run_id, const std::string& key, size_t offset = 0,
                                           size_t limit = SIZE_MAX, bool* more = nullptr);
  // The latest value of each metric (highest step, then latest timestamp: MLflow's rule), sorted by key.
  std::vector<MlflowMetric> latest_metrics(const std::string& run_id);
  // Every metric's history, by key (`air get run --metrics`).
  std::map<std::string, std::vector<MlflowMetric>> all_metric_history(const std::string& run_id);

  // The MLflow run of one attempt of an air run: created on first call (in the experiment named
  // experiment_name, "Default" when empty; tagged air.run_id and air.attempt), the same id afterwards.
  // run_name: the workload's mlflow_run_name; attempt 1's MLflow run is named so, a retry "<name>-attempt-<k>".
  // Without it: "<air run id>-attempt-<k>".
  std::string attempt_run(const std::string& air_run_id, int attempt, const std::string& experiment_name,
                          const std::string& run_name = {});
  // attempt -> MLflow run id, for every attempt of an air run that has one.
  std::map<int, std::string> attempt_runs(const std::string& air_run_id);
  // The air run whose attempt owns this MLflow run; nullopt for runs created through the API.
  std::optional<std::string> air_run_of(const std::string& mlflow_run_id);

 private:
  MlflowRunInfo run_info(const std::string& run_id);
  MlflowRun get_run_locked(const std::string& run_id);

  std::unique_ptr<sql::Db> db_;
  std::mutex mu_;
};

}  // namespace air::server
