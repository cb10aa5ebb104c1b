// SecretsClient over the workspace client (core/client/client.h). Request bodies that hold a value are wiped after sending; error messages
// are built from the server's error_code/message only (neither our request nor its value is quoted).
#include "core/secrets/client.h"

#include <openssl/crypto.h>

#include <nlohmann/json.hpp>

#include "core/base/codec.h"
#include "core/client/client.h"

namespace air {

namespace {

std::string hint_for(const std::string& code) {
  if (code == "RESOURCE_DOES_NOT_EXIST") return "list what exists with 'air secrets list-scopes' or 'air secrets list-secrets SCOPE'";
  if (code == "UNAUTHENTICATED" || code == "HTTP_401") return "check the workspace token";
  if (code == "PERMISSION_DENIED" || code == "HTTP_403") return "the token lacks permission for this operation";
  return {};
}

[[noreturn]] void throw_api_error(const HttpResponse& r) {
  std::string code = "HTTP_" + std::to_string(r.status), message;
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object()) {
    if (j.contains("error_code") && j["error_code"].is_string()) code = j["error_code"];
    if (j.contains("message") && j["message"].is_string()) message = j["message"];
    // An air workspace's own error shape (for example from its authentication layer).
    if (auto e = j.find("error"); e != j.end() && e->is_object()) {
      if (e->contains("code") && (*e)["code"].is_string()) code = (*e)["code"];
      if (e->contains("message") && (*e)["message"].is_string()) message = (*e)["message"];
    }
  }
  if (message.empty()) message = "the secrets API answered HTTP " + std::to_string(r.status);
  throw SecretsApiError(r.status, code, message, hint_for(code));
}

std::string q(const std::string& s) { return percent_encode(s); }

}  // namespace

SecretsClient::SecretsClient(const WorkspaceEndpoint& endpoint, long timeout_ms)
    : http_(std::make_unique<Client>(endpoint.host, endpoint.token)), timeout_ms_(timeout_ms) {}

SecretsClient::~SecretsClient() = default;

std::string SecretsClient::call(const std::string& method, const std::string& path, const std::string& body) {
  HttpResponse r = http_->request(method, path, body, method == "POST" ? "application/json" : "", timeout_ms_);
  if (r.status < 200 || r.status >= 300) throw_api_error(r);
  return r.body;
}

void SecretsClient::create_scope(const std::string& scope) {
  call("POST", "/api/2.0/secrets/scopes/create", nlohmann::json{{"scope", scope}}.dump());
}

std::vector<SecretScopeInfo> SecretsClient::list_scopes() {
  auto j = nlohmann::json::parse(call("GET", "/api/2.0/secrets/scopes/list", {}), nullptr, false);
  std::vector<SecretScopeInfo> out;
  // Databricks omits "scopes" when there are none.
  if (j.is_object() && j.contains("scopes") && j["scopes"].is_array())
    for (const auto& s : j["scopes"]) out.push_back({s.value("name", ""), s.value("backend_type", "")});
  return out;
}

void SecretsClient::delete_scope(const std::string& scope) {
  call("POST", "/api/2.0/secrets/scopes/delete", nlohmann::json{{"scope", scope}}.dump());
}

void SecretsClient::put(std::string body) {
  try {
    call("POST", "/api/2.0/secrets/put", body);
  } catch (...) {
    OPENSSL_cleanse(body.data(), body.size());
    throw;
  }
  OPENSSL_cleanse(body.data(), body.size());
}

void SecretsClient::put_secret(const std::string& scope, const std::string& key, const std::string& string_value) {
  put(nlohmann::json{{"scope", scope}, {"key", key}, {"string_value", string_value}}.dump());
}

void SecretsClient::put_secret_bytes(const std::string& scope, const std::string& key, const std::string& bytes) {
  put(nlohmann::json{{"scope", scope}, {"key", key}, {"bytes_value", base64_encode(bytes)}}.dump());
}

std::vector<SecretInfo> SecretsClient::list_secrets(const std::string& scope) {
  auto j = nlohmann::json::parse(call("GET", "/api/2.0/secrets/list?scope=" + q(scope), {}), nullptr, false);
  std::vector<SecretInfo> out;
  if (j.is_object() && j.contains("secrets") && j["secrets"].is_array()) {
    for (const auto& s : j["secrets"]) {
      SecretInfo info{s.value("key", ""), 0};
      // Databricks' examples show the timestamp as a string; accept both.
      if (auto t = s.find("last_updated_timestamp"); t != s.end()) {
        if (t->is_number()) info.last_updated_timestamp = t->get<int64_t>();
        else if (t->is_string()) info.last_updated_timestamp = std::strtoll(t->get<std::string>().c_str(), nullptr, 10);
      }
      out.push_back(info);
    }
  }
  return out;
}

void SecretsClient::put_acl(const std::string& scope, const std::string& principal, const std::string& permission) {
  call("POST", "/api/2.0/secrets/acls/put",
       nlohmann::json{{"scope", scope}, {"principal", principal}, {"permission", permission}}.dump());
}

std::string SecretsClient::get_acl(const std::string& scope, const std::string& principal) {
  auto j = nlohmann::json::parse(call("GET", "/api/2.0/secrets/acls/get?scope=" + q(scope) + "&principal=" + q(principal), {}),
                                 nullptr, false);
  return j.is_object() ? j.value("permission", "") : "";
}

std::vector<std::pair<std::string, std::string>> SecretsClient::list_acls(const std::string& scope) {
  auto j = nlohmann::json::parse(call("GET", "/api/2.0/secrets/acls/list?scope=" + q(scope), {}), nullptr, false);
  std::vector<std::pair<std::string, std::string>> out;
  if (j.is_object() && j.contains("items") && j["items"].is_array())
    for (const auto& a : j["items"]) out.emplace_back(a.value("principal", ""), a.value("permission", ""));
  return out;
}

void SecretsClient::delete_acl(const std::string& scope, const std::string& principal) {
  call("POST", "/api/2.0/secrets/acls/delete", nlohmann::json{{"scope", scope}, {"principal", principal}}.dump());
}

std::string SecretsClient::get_secret(const std::string& scope, const std::string& key) {
  std::string body = call("GET", "/api/2.0/secrets/get?scope=" + q(scope) + "&key=" + q(key), {});
  auto j = nlohmann::json::parse(body, nullptr, false);
  OPENSSL_cleanse(body.data(), body.size());
  if (!j.is_object() || !j.contains("value") || !j["value"].is_string())
    throw SecretsApiError(200, "MALFORMED_RESPONSE", "the secrets API returned no value for " + scope + "/" + key, {});
  auto value = base64_decode(j["value"].get_ref<const std::string&>());
  if (!value)
    throw SecretsApiError(200, "MALFORMED_RESPONSE", "the secrets API returned a value for " + scope + "/" + key +
                                                         " that is not base64", {});
  return *value;
}

void SecretsClient::delete_secret(const std::string& scope, const std::string& key) {
  call("POST", "/api/2.0/secrets/delete", nlohmann::json{{"scope", scope}, {"key", key}}.dump());
}

std::map<std::string, std::string> resolve_secrets(SecretsClient& client, const std::vector<SecretBinding>& bindings) {
  std::map<std::string, std::string> values;
  std::vector<std::string> failures;
  for (const auto& b : bindings) {
    try {
      values[b.name] = client.get_secret(b.scope, b.key);
    } catch (const SecretsApiError& e) {
      failures.push_back(b.name + " (" + b.scope + "/" + b.key + "): " + e.what());
    }
  }
  if (!failures.empty()) {
    for (auto& [name, v] : values) OPENSSL_cleanse(v.data(), v.size());
    std::string msg = "cannot resolve " + std::to_string(failures.size()) + " of " + std::to_string(bindings.size()) +
                      " secrets:";
    for (const auto& f : failures) msg += "\n  " + f;
    throw Error(msg, "create them with 'air secrets put-secret SCOPE KEY'");
  }
  return values;
}

}  // namespace air
