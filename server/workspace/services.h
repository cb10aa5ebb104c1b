// What the workspace serves besides runs: the secret store and the MLflow tracking store (both in
// workspace.db, the master key in secrets.key beside it), the submit-time check that every referenced
// secret exists, and the routing of /api/2.0/secrets and /api/2.0/mlflow with the workspace's tokens.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "core/base/diagnostics.h"
#include "server/api/mlflow.h"
#include "server/store/mlflow.h"
#include "server/store/secrets.h"
#include "server/api/secrets.h"

namespace air {
struct Workload;
}

namespace air::server {

struct Principal;

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
  void end_mlflow_run(const std::string& mlflow_run_id, const std::string& attempt_state);
  // Fills each attempt's mlflow_run_id and (with `values`) its latest metrics.
  void add_metrics(api::RunInfo& run, bool values = true);

 private:
  std::unique_ptr<SecretStore> secrets_;
  std::unique_ptr<MlflowStore> mlflow_;
};

// Who may do what on /api/2.0/secrets and /api/2.0/mlflow:
//  - an admin: everything;
//  - a user: secrets by the scopes' ACLs (server/api/secrets.h); MLflow runs of an air run by the run's
//    permissions (`may_use_run(air_run, write)` returns the refusal), others freely;
//  - a node token: secrets `get` of the scope/key pairs its run references (`run_refs`) while the run's
//    owner may READ them, and MLflow runs of its own run;
//  - anything else: UNAUTHENTICATED.
// `target` is the request path with its query string.
// A refusal: `hidden` when the caller may not even view the run (then answered as an unknown MLflow run).
struct RunRefusal {
  bool hidden = false;
  std::string message;
};
using RunCheck = std::function<std::optional<RunRefusal>(const std::string& air_run, bool write)>;
ApiReply handle_services_request(WorkspaceServices& services, const std::optional<Principal>& caller,
                                 const std::vector<SecretRef>& run_refs, const std::string& method,
                                 const std::string& target, const std::string& body, const RunCheck& may_use_run = {});

}  // namespace air::server
