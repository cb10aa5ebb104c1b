// Databricks-compatible secrets endpoints over SecretStore. Request parsing is strict about required fields
// and lenient about unknown ones (initial_manage_principal, scope_backend_type are accepted and ignored).
#include "server/api/secrets.h"

#include <map>

#include <fmt/format.h>

#include "core/base/codec.h"
#include "server/workspace/access.h"

namespace air::server {

namespace {

constexpr std::string_view kPrefix = "/api/2.0/secrets/";

int status_for(const std::string& code) {
  if (code == "RESOURCE_DOES_NOT_EXIST") return 404;
  if (code == "RESOURCE_ALREADY_EXISTS") return 409;
  if (code == "PERMISSION_DENIED") return 403;
  if (code == "UNAUTHENTICATED") return 401;
  return 400;
}

struct BadRequest {
  std::string code, message;
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Parameters from the query string (GET) merged with a JSON object body (POST, or a GET with a body).
nlohmann::json request_params(const std::string& path, const std::string& body) {
  nlohmann::json params = nlohmann::json::object();
  if (!body.empty()) {
    // Never echo the parser's message: it quotes the bytes it choked on, which may be a value.
    params = nlohmann::json::parse(body, nullptr, false);
    if (params.is_discarded() || !params.is_object())
      throw BadRequest{"MALFORMED_REQUEST", "the request body is not a JSON object"};
  }
  for (const auto& [k, v] : query_params(path))
    if (!params.contains(k)) params[k] = v;
  return params;
}

std::string required_string(const nlohmann::json& p, const char* name) {
  auto it = p.find(name);
  if (it == p.end() || it->is_null())
    throw BadRequest{"INVALID_PARAMETER_VALUE", fmt::format("missing required field: {}", name)};
  if (!it->is_string()) throw BadRequest{"INVALID_PARAMETER_VALUE", fmt::format("field '{}' must be a string", name)};
  return it->get<std::string>();
}

ApiReply put_secret(SecretStore& store, const nlohmann::json& p) {
  std::string scope = required_string(p, "scope"), key = required_string(p, "key");
  bool has_string = p.contains("string_value") && !p["string_value"].is_null();
  bool has_bytes = p.contains("bytes_value") && !p["bytes_value"].is_null();
  if (has_string == has_bytes)
    throw BadRequest{"INVALID_PARAMETER_VALUE", "exactly one of 'string_value' and 'bytes_value' must be specified"};
  if (has_string) {
    store.put_secret(scope, key, required_string(p, "string_value"), false);
  } else {
    auto bytes = base64_decode(required_string(p, "bytes_value"));
    if (!bytes) throw BadRequest{"INVALID_PARAMETER_VALUE", "field 'bytes_value' is not valid base64"};
    store.put_secret(scope, key, *bytes, true);
  }
  return {};
}

bool node_may_read(const SecretsCaller& caller, const std::string& scope, const std::string& key) {
  for (const auto& r : caller.readable) {
    bool same_scope = r.scope.size() == scope.size() &&
                      std::equal(r.scope.begin(), r.scope.end(), scope.begin(), [](char a, char b) {
                        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
                      });
    if (same_scope && r.key == key) return true;
  }
  return false;
}

// The permission each op needs on its scope (scopes/create and scopes/list need none).
const char* needed_permission(const std::string& op) {
  if (op == "list" || op == "get") return "READ";
  if (op == "put" || op == "delete") return "WRITE";
  if (op == "scopes/delete" || op.rfind("acls/", 0) == 0) return "MANAGE";
  return "";
}

ApiReply acls(SecretStore& store, const std::string& op, const nlohmann::json& p) {
  std::string scope = required_string(p, "scope");
  if (op == "acls/put") {
    store.put_acl(scope, required_string(p, "principal"), required_string(p, "permission"));
    return {};
  }
  if (op == "acls/get") {
    std::string principal = required_string(p, "principal");
    auto perm = store.get_acl(scope, principal);
    if (!perm)
      throw SecretError("RESOURCE_DOES_NOT_EXIST", fmt::format("scope '{}' has no ACL for principal '{}'", scope, principal));
    return {200, {{"principal", principal}, {"permission", *perm}}};
  }
  if (op == "acls/list") {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& [principal, perm] : store.list_acls(scope)) items.push_back({{"principal", principal}, {"permission", perm}});
    return {200, {{"items", items}}};
  }
  store.delete_acl(scope, required_string(p, "principal"));  // acls/delete
  return {};
}

ApiReply dispatch(SecretStore& store, const std::string& method, const std::string& op,
                  const nlohmann::json& p, const SecretsCaller& caller) {
  const SecretsEndpoint* route = nullptr;
  for (const auto& r : secrets_endpoints())
    if (op == r.op) route = &r;
  if (!route) return error_reply(404, "ENDPOINT_NOT_FOUND", fmt::format("no API found for '{}{}'", kPrefix, op));
  if (method != route->method)
    return error_reply(405, "BAD_REQUEST", fmt::format("use {} for {}{}", route->method, kPrefix, op));
  if (caller.role == SecretsCaller::Role::kNone)
    return error_reply(401, "UNAUTHENTICATED", "a valid access token is required");
  if (caller.role == SecretsCaller::Role::kNode && op != "get")
    return error_reply(403, "PERMISSION_DENIED", "a node token may only read the secrets its run references");

  // The caller's right on the scope the request names (admins: all of them).
  if (const char* need = needed_permission(op); *need && caller.role != SecretsCaller::Role::kAdmin) {
    std::string scope = required_string(p, "scope");
    if (caller.role == SecretsCaller::Role::kNode && !node_may_read(caller, scope, required_string(p, "key")))
      return error_reply(403, "PERMISSION_DENIED",
                         fmt::format("this node token may read only the secrets its run references; {}/{} is not one "
                                     "of them",
                                     scope, required_string(p, "key")));
    std::string have = caller.owner_admin ? "MANAGE" : store.permission(scope, caller.principals);
    if (auto why = secret_refusal(caller.name, scope, have, need))
      return error_reply(403, "PERMISSION_DENIED",
                         caller.role == SecretsCaller::Role::kNode ? "the run's owner: " + *why : *why);
  }

  if (op == "scopes/create") {
    store.create_scope(required_string(p, "scope"), caller.role == SecretsCaller::Role::kUser ? caller.name : "");
    return {};
  }
  if (op == "scopes/list") {
    nlohmann::json scopes = nlohmann::json::array();
    for (const auto& name : store.list_scopes()) scopes.push_back({{"name", name}, {"backend_type", "AIR"}});
    return {200, {{"scopes", scopes}}};
  }
  if (op == "scopes/delete") {
    store.delete_scope(required_string(p, "scope"));
    return {};
  }
  if (op.rfind("acls/", 0) == 0) return acls(store, op, p);
  if (op == "put") return put_secret(store, p);
  if (op == "list") {
    nlohmann::json secrets = nlohmann::json::array();
    for (const auto& m : store.list_secrets(required_string(p, "scope")))
      secrets.push_back({{"key", m.key}, {"last_updated_timestamp", m.last_updated_timestamp}});
    return {200, {{"secrets", secrets}}};
  }
  if (op == "get") {
    std::string scope = required_string(p, "scope"), key = required_string(p, "key");
    SecretValue v = store.get_secret(scope, key);
    return {200, {{"key", key}, {"value", base64_encode(v.bytes)}}};
  }
  // op == "delete"
  store.delete_secret(required_string(p, "scope"), required_string(p, "key"));
  return {};
}

}  // namespace

const std::vector<SecretsEndpoint>& secrets_endpoints() {
  static const std::vector<SecretsEndpoint> routes = {
      {"scopes/create", "POST"}, {"scopes/list", "GET"}, {"scopes/delete", "POST"}, {"put", "POST"},
      {"list", "GET"},           {"get", "GET"},         {"delete", "POST"},        {"acls/put", "POST"},
      {"acls/get", "GET"},       {"acls/list", "GET"},   {"acls/delete", "POST"}};
  return routes;
}

std::string path_without_query(const std::string& path) { return path.substr(0, path.find('?')); }

std::optional<nlohmann::json> secrets_params(const std::string& path, const std::string& body) {
  try {
    return request_params(path, body);
  } catch (const BadRequest&) {
    return std::nullopt;
  }
}

std::map<std::string, std::string> query_params(const std::string& path) {
  std::map<std::string, std::string> out;
  auto q = path.find('?');
  if (q == std::string::npos) return out;
  std::string query = path.substr(q + 1);
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    std::string part = query.substr(pos, amp - pos);
    if (!part.empty()) {
      auto eq = part.find('=');
      out.emplace(url_decode(part.substr(0, eq)), eq == std::string::npos ? "" : url_decode(part.substr(eq + 1)));
    }
    pos = amp + 1;
  }
  return out;
}

ApiReply error_reply(int status, const std::string& code, const std::string& message) {
  return {status, {{"error_code", code}, {"message", message}}};
}

bool is_secrets_path(const std::string& path) { return path.rfind(kPrefix, 0) == 0; }

ApiReply handle_secrets_request(SecretStore& store, const std::string& method, const std::string& path,
                                const std::string& body, const SecretsCaller& caller) {
  std::string bare = path_without_query(path);
  if (!is_secrets_path(bare)) return error_reply(404, "ENDPOINT_NOT_FOUND", "not a secrets API path");
  try {
    nlohmann::json params = request_params(path, body);
    return dispatch(store, method, bare.substr(kPrefix.size()), params, caller);
  } catch (const BadRequest& e) {
    return error_reply(400, e.code, e.message);
  } catch (const SecretError& e) {
    return error_reply(status_for(e.code()), e.code(), e.what());
  } catch (const std::exception& e) {
    // Store failures (database, decryption) carry names only; report them as an internal error.
    return error_reply(500, "INTERNAL_ERROR", e.what());
  }
}

}  // namespace air::server
