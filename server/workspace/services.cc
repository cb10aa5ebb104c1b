// WorkspaceServices: the secret and MLflow stores as the workspace uses them, and their HTTP routing.
#include "server/workspace/services.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <set>

#include "core/secrets/refs.h"
#include "core/workload/workload.h"
#include "server/store/master_key.h"
#include "server/workspace/workspace.h"

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

void WorkspaceServices::end_mlflow_run(const std::string& mlflow_run_id, const std::string& attempt_state) {
  if (mlflow_run_id.empty()) return;
  bool killed = attempt_state == "CANCELED" || attempt_state == "TIMED_OUT" || attempt_state == "PREEMPTED";
  std::string status = attempt_state == "SUCCEEDED" ? "FINISHED" : killed ? "KILLED" : "FAILED";
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

ApiReply handle_services_request(WorkspaceServices& services, const std::optional<Principal>& caller,
                                 const std::vector<SecretRef>& run_refs, const std::string& method,
                                 const std::string& target, const std::string& body, const RunCheck& may_use_run) {
  std::string path = path_without_query(target);
  if (is_secrets_path(path)) {
    SecretsCaller who;
    if (caller && caller->admin) who = SecretsCaller::admin(caller->user);
    else if (caller && caller->is_node()) who = SecretsCaller::node(run_refs, caller->owner, acl_principals(*caller), caller->owner_admin);
    else if (caller) who = SecretsCaller::user(caller->user, acl_principals(*caller));
    return handle_secrets_request(services.secrets(), method, target, body, who);
  }
  if (is_mlflow_path(path)) {
    // A node token may not touch the MLflow runs of another air run's attempts; a user those of runs it
    // may not view (read) or manage (write).
    if (caller && !caller->admin) {
      std::string run_id = mlflow_run_named(target, body);
      auto owner = run_id.empty() ? std::nullopt : services.mlflow().air_run_of(run_id);
      if (owner && caller->is_node() && *owner != caller->run_id)
        return error_reply(403, "PERMISSION_DENIED",
                           fmt::format("a node token may use only its own run's MLflow runs; MLflow run {} belongs to "
                                       "run {}, not {}", run_id, *owner, caller->run_id));
      if (owner && !caller->is_node() && may_use_run)
        if (auto why = may_use_run(*owner, method != "GET"))
          return why->hidden ? error_reply(404, "RESOURCE_DOES_NOT_EXIST",
                                           fmt::format("Run with id={} not found", run_id.substr(0, 100)))
                             : error_reply(403, "PERMISSION_DENIED", why->message);
    }
    return handle_mlflow_request(services.mlflow(), method, target, body, caller.has_value());
  }
  return error_reply(404, "ENDPOINT_NOT_FOUND", "no API at " + path);
}

}  // namespace air::server
