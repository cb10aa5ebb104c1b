// The secrets REST API at Databricks' documented paths (/api/2.0/secrets/...), independent of the HTTP
// library: the server's router passes method, path (with query), body and who is calling, and sends back
// the status and JSON body it gets. Errors use Databricks' shape {"error_code", "message"}.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/store/secrets.h"

namespace air::server {

// A framework-agnostic response: HTTP status and a JSON body (also used by the MLflow handler).
struct ApiReply {
  int status = 200;
  nlohmann::json body = nlohmann::json::object();
};

// Who is calling, as the server's authentication decided it.
//  - kAdmin: the workspace's user token (the CLI). May manage scopes and secrets and read values (/get;
//    Databricks lets a user with READ do the same through its API).
//  - kNode: a node agent's run-scoped token. May only /get the scope/key pairs its run references
//    (`readable`); everything else, including listing, is PERMISSION_DENIED.
//  - kNone: no valid token: UNAUTHENTICATED.
struct SecretsCaller {
  enum class Role { kNone, kAdmin, kNode };
  Role role = Role::kNone;
  std::vector<SecretRef> readable;

  static SecretsCaller admin() { return {Role::kAdmin, {}}; }
  static SecretsCaller node(std::vector<SecretRef> refs) { return {Role::kNode, std::move(refs)}; }
};

// True for paths this handler owns ("/api/2.0/secrets/..."), so a router can dispatch by prefix.
bool is_secrets_path(const std::string& path);

// Handles one request. `path` may carry a query string (GET parameters); POST parameters come as JSON in
// `body`. Never throws; never puts a secret value in an error message.
ApiReply handle_secrets_request(SecretStore& store, const std::string& method, const std::string& path,
                                const std::string& body, const SecretsCaller& caller);

// Helpers shared with the MLflow handler: split "path?query" and decode a query string.
std::string path_without_query(const std::string& path);
std::map<std::string, std::string> query_params(const std::string& path);
ApiReply error_reply(int status, const std::string& code, const std::string& message);

}  // namespace air::server
