// handle_services_request: the secrets and MLflow routes with the workspace's tokens (server/api/services.h).
#include "server/api/services.h"

#include <fmt/format.h>

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

}  // namespace air::server
