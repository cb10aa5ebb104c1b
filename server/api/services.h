// The HTTP dispatcher of /api/2.0/secrets and /api/2.0/mlflow: who may do what, then the secrets or MLflow
// handler (server/api/secrets.h, server/api/mlflow.h) over the workspace's stores (server/workspace/services.h).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/secrets/refs.h"
#include "server/api/mlflow.h"
#include "server/api/secrets.h"
#include "server/workspace/access.h"
#include "server/workspace/services.h"

namespace air::server {

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

namespace http { class Server; }
class Auth;
class Lifecycle;
class Runs;

// Registers /api/2.0/secrets/* and /api/2.0/mlflow/*. Takes Auth (who is calling), the services' stores, Runs
// (a run's owner and grants, to check MLflow runs) and the Lifecycle (a node token's secret references from
// its node spec; a node's metrics keep its stall watchdog quiet).
void install_services_routes(http::Server& srv, const Auth& auth, WorkspaceServices& services, const Runs& runs,
                             Lifecycle& lifecycle);

}  // namespace air::server
