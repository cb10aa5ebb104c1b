// handle_services_request: the secrets and MLflow routes with the workspace's tokens, and their registration
// (server/api/services.h).
#include "server/api/services.h"

#include <fmt/format.h>

#include "server/api/route.h"
#include "server/health/run_health.h"
#include "server/http/server.h"
#include "server/workspace/auth.h"
#include "server/workspace/lifecycle.h"
#include "server/workspace/runs.h"

namespace air::server {

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

// A node token reads only the secrets its run references.
void install_services_routes(http::Server& srv, const Auth& auth, WorkspaceServices& services, const Runs& runs,
                             Lifecycle& lifecycle) {
  auto h = [&auth, &services, &runs, &lifecycle](const http::Request& req, http::Response& res) {
    auto who = auth.authenticate(route::bearer(req));
    std::vector<SecretRef> refs;
    if (who && who->is_node() && is_secrets_path(req.path))  // MLflow calls are frequent: skip the spec
      for (const auto& s : lifecycle.node_spec(who->run_id, who->attempt, 0).secrets) refs.push_back({s.scope, s.key});
    RunCheck may_use_run = [&runs, &who](const std::string& run, bool write) -> std::optional<RunRefusal> {
      auto a = runs.access(run);
      if (run_level(*who, a.owner, a.grants) < RunLevel::kCanView) return RunRefusal{true, {}};
      auto why = run_refusal(*who, run, a.owner, a.grants, write ? RunLevel::kCanManageRun : RunLevel::kCanView);
      return why ? std::optional<RunRefusal>(RunRefusal{false, *why}) : std::nullopt;
    };
    ApiReply r = handle_services_request(services, who, refs, req.method, req.target, req.body, may_use_run);
    // Metrics from a node of a running attempt keep its stall watchdog quiet (no log line needed).
    if (who && who->is_node() && r.status == 200 && req.method == "POST" &&
        (req.path == "/api/2.0/mlflow/runs/log-batch" || req.path == "/api/2.0/mlflow/runs/log-metric"))
      if (!health::only_system_metrics(req.body)) lifecycle.note_metrics(who->run_id, who->attempt);  // an agent's sample is not progress
    route::send_json(res, r.body, r.status);
  };
  // No body is read without a known token (the handlers answer the caller's rights in their own shapes).
  http::Gate any_token = [&auth, &services](const http::Request& req, http::Response& res) {
    if (auth.authenticate(route::bearer(req))) return true;
    ApiReply r = handle_services_request(services, std::nullopt, {}, req.method, req.target, "");
    route::send_json(res, r.body, r.status);
    return false;
  };
  for (const char* prefix : {"/api/2.0/secrets/", "/api/2.0/mlflow/"}) {
    srv.Get(std::string(prefix) + ".*", h, {route::kJsonBody, any_token});
    srv.Post(std::string(prefix) + ".*", h, {route::kJsonBody, any_token});
  }
}

}  // namespace air::server
