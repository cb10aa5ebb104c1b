// What the workspace serves besides runs: the secret store and the MLflow tracking store (both in
// workspace.db, the master key in secrets.key beside it), and the submit-time check that every referenced
// secret exists. Their HTTP routes (/api/2.0/secrets, /api/2.0/mlflow) are server/api/services.h.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "core/base/diagnostics.h"
#include "core/wire/run_state.h"
#include "server/store/mlflow.h"
#include "server/store/secrets.h"

namespace air {
struct Workload;
}

namespace air::server {

class WorkspaceServices {
 public:
  // Creates the tables when missing and loads (or creates) the master key; throws air::Error when the key
  // file is unsafe (see load_or_create_master_key).
  explicit WorkspaceServices(const std::string& db_path);
  SecretStore& secrets() { return *secrets_; }
  MlflowStore& mlflow() { return *mlflow_; }

  // One error diagnostic per secret the workload references that does not exist (by name only), each with
  // the `air secrets put-secret` command that creates it. Empty when all exist.
  std::vector<Diagnostic> missing_secrets(const Workload& w, const std::string& file_name);

  // The attempt's MLflow run id (created in the workload's experiment on first call); "" when the tracking
  // store failed (the reason goes to stderr: metrics are not worth failing a run for).
  std::string attempt_mlflow_run(const std::string& run_id, int attempt, const std::string& experiment_name,
                                 const std::string& run_name = {});
  // Marks the attempt's MLflow run ended: FINISHED for SUCCEEDED, KILLED for CANCELED/TIMED_OUT/PREEMPTED, else FAILED.
  void end_mlflow_run(const std::string& mlflow_run_id, RunState attempt_end);
  // Fills each attempt's mlflow_run_id and (with `values`) its latest metrics.
  void add_metrics(api::RunInfo& run, bool values = true);

 private:
  std::unique_ptr<SecretStore> secrets_;
  std::unique_ptr<MlflowStore> mlflow_;
};

}  // namespace air::server
