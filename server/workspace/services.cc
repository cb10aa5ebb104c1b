// WorkspaceServices: the secret and MLflow stores as the workspace uses them (their routes: server/api/services.cc).
#include "server/workspace/services.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <set>

#include "core/secrets/refs.h"
#include "core/workload/workload.h"
#include "server/store/master_key.h"

namespace air::server {

WorkspaceServices::WorkspaceServices(const std::string& db_path)
    : secrets_(std::make_unique<SecretStore>(db_path, load_or_create_master_key(master_key_path_for(db_path)))),
      mlflow_(std::make_unique<MlflowStore>(db_path)) {}

std::vector<Diagnostic> WorkspaceServices::missing_secrets(const Workload& w, const std::string& file_name) {
  std::vector<SecretRef> refs;
  for (const auto& s : w.secrets) refs.push_back({s.scope, s.key});
  std::vector<SecretRef> missing = secrets_->missing(refs);
  std::vector<Diagnostic> out;
  std::set<std::pair<std::string, std::string>> gone;
  for (const auto& m : missing) gone.insert({m.scope, m.key});
  for (const auto& s : w.secrets) {
    if (!gone.count({s.scope, s.key})) continue;
    Diagnostic d = missing_secret_diagnostic(s, file_name);
    out.push_back(std::move(d));
  }
  return out;
}

std::string WorkspaceServices::attempt_mlflow_run(const std::string& run_id, int attempt,
                                                  const std::string& experiment_name, const std::string& run_name) {
  try {
    return mlflow_->attempt_run(run_id, attempt, experiment_name, run_name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "air server: cannot create the MLflow run of %s attempt %d: %s\n", run_id.c_str(), attempt,
                 e.what());
    return {};
  }
}

void WorkspaceServices::end_mlflow_run(const std::string& mlflow_run_id, RunState attempt_end) {
  if (mlflow_run_id.empty()) return;
  bool killed = attempt_end == RunState::kCanceled || attempt_end == RunState::kTimedOut || attempt_end == RunState::kPreempted;
  std::string status = attempt_end == RunState::kSucceeded ? "FINISHED" : killed ? "KILLED" : "FAILED";
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  try {
    mlflow_->update_run(mlflow_run_id, status, now, std::nullopt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "air server: cannot end MLflow run %s: %s\n", mlflow_run_id.c_str(), e.what());
  }
}

void WorkspaceServices::add_metrics(api::RunInfo& run, bool values) {
  std::map<int, std::string> ids;
  try {
    ids = mlflow_->attempt_runs(run.run_id);
  } catch (const std::exception&) {
    return;  // the run shows without metrics rather than not at all
  }
  for (auto& a : run.attempts) {
    auto it = ids.find(a.number);
    if (it == ids.end()) continue;
    a.mlflow_run_id = it->second;
    a.metrics.clear();
    if (!values) continue;
    try {
      for (const auto& m : mlflow_->latest_metrics(it->second)) a.metrics.push_back({m.key, m.value, m.timestamp, m.step});
    } catch (const std::exception&) {
    }
  }
}

}  // namespace air::server
