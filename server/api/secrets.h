// The secrets REST API at Databricks' documented paths (/api/2.0/secrets/...), independent of the HTTP
// library: the server's router passes method, path (with query), body and who is calling, and sends back
// the status and JSON body it gets. Errors use Databricks' shape {"error_code", "message"}.
#pragma once
#include <map>
#include <optional>
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
//  - kAdmin: a workspace admin: everything, on every scope.
//  - kUser: a user; `principals` are its name and its groups. Rights come from the scope's ACLs
//    (READ: list and get; WRITE: also put and delete secrets; MANAGE: also ACLs and deleting the scope);
//    creating a scope gives the creator MANAGE. Listing scopes shows every scope's name (as Databricks does).
//  - kNode: a node agent's run-scoped token. May only /get the scope/key pairs its run references
//    (`readable`), and only while the run's owner (`principals`) may READ the scope; everything else is
//    PERMISSION_DENIED.
//  - kNone: no valid token: UNAUTHENTICATED.
struct SecretsCaller {
  enum class Role { kNone, kAdmin, kUser, kNode };
  Role role = Role::kNone;
  std::vector<SecretRef> readable;
  std::string name;                     // the user (for a node: the run's owner), for messages
  std::vector<std::string> principals;  // the user (or owner) and its groups
  bool owner_admin = false;             // kNode: the run's owner is an admin (every scope readable)

  static SecretsCaller admin(std::string name = {}) { return {Role::kAdmin, {}, std::move(name), {}, false}; }
  static SecretsCaller user(std::string name, std::vector<std::string> principals) {
    return {Role::kUser, {}, std::move(name), std::move(principals), false};
  }
  // A node of a run owned by `owner` (its principals; owner_admin: an admin's run).
  static SecretsCaller node(std::vector<SecretRef> refs, std::string owner, std::vector<std::string> principals,
                            bool owner_admin) {
    return {Role::kNode, std::move(refs), std::move(owner), std::move(principals), owner_admin};
  }
};

// The secrets endpoints this handler serves (op after /api/2.0/secrets/, and its method).
struct SecretsEndpoint {
  const char* op;
  const char* method;
};
const std::vector<SecretsEndpoint>& secrets_endpoints();

// True for paths this handler owns ("/api/2.0/secrets/..."), so a router can dispatch by prefix.
bool is_secrets_path(const std::string& path);

// Handles one request. `path` may carry a query string (GET parameters); POST parameters come as JSON in
// `body`. Never throws; never puts a secret value in an error message.
ApiReply handle_secrets_request(SecretStore& store, const std::string& method, const std::string& path,
                                const std::string& body, const SecretsCaller& caller);

// The parameters this handler reads from a request (the JSON object body, then the query string for the
// names the body lacks), or nullopt for a body that is not a JSON object. The audit log names its object
// from these same parameters.
std::optional<nlohmann::json> secrets_params(const std::string& path, const std::string& body);

// Helpers shared with the MLflow handler: split "path?query" and decode a query string.
std::string path_without_query(const std::string& path);
std::map<std::string, std::string> query_params(const std::string& path);
ApiReply error_reply(int status, const std::string& code, const std::string& message);

}  // namespace air::server
