// Client for the secrets REST API at Databricks' documented paths. The same code talks to a Databricks
// workspace (host + personal access token) or to an air workspace. Errors carry the Databricks error_code
// and never a secret value.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.h"

namespace air {

class Client;

// Where the secrets API lives: an air workspace (http://127.0.0.1:8470) or a Databricks host.
struct WorkspaceEndpoint {
  std::string host;
  std::string token;
};

// An error response of the secrets API. code() is the Databricks error_code (RESOURCE_DOES_NOT_EXIST,
// RESOURCE_ALREADY_EXISTS, INVALID_PARAMETER_VALUE, PERMISSION_DENIED, ...) or HTTP_<status>.
class SecretsApiError : public Error {
 public:
  SecretsApiError(long http_status, std::string code, std::string message, std::string hint)
      : Error(std::move(message), std::move(hint), kExitFailed), http_status_(http_status), code_(std::move(code)) {}
  long http_status() const { return http_status_; }
  const std::string& code() const { return code_; }

 private:
  long http_status_;
  std::string code_;
};

struct SecretScopeInfo {
  std::string name;
  std::string backend_type;  // "AIR" on our workspace, "DATABRICKS" or "AZURE_KEYVAULT" on Databricks
};

struct SecretInfo {
  std::string key;
  int64_t last_updated_timestamp = 0;  // ms since the epoch
};

class SecretsClient {
 public:
  explicit SecretsClient(const WorkspaceEndpoint& endpoint, long timeout_ms = 30000);
  ~SecretsClient();

  void create_scope(const std::string& scope);
  std::vector<SecretScopeInfo> list_scopes();
  void delete_scope(const std::string& scope);
  void put_secret(const std::string& scope, const std::string& key, const std::string& string_value);
  void put_secret_bytes(const std::string& scope, const std::string& key, const std::string& bytes);
  std::vector<SecretInfo> list_secrets(const std::string& scope);
  // The value's bytes (the API returns them base64-encoded).
  std::string get_secret(const std::string& scope, const std::string& key);
  void delete_secret(const std::string& scope, const std::string& key);
  // Scope ACLs: (principal, READ|WRITE|MANAGE).
  void put_acl(const std::string& scope, const std::string& principal, const std::string& permission);
  std::string get_acl(const std::string& scope, const std::string& principal);  // the permission
  std::vector<std::pair<std::string, std::string>> list_acls(const std::string& scope);
  void delete_acl(const std::string& scope, const std::string& principal);

 private:
  std::string call(const std::string& method, const std::string& path, const std::string& body);
  // POST /secrets/put with a body that holds a value: the body is wiped after sending, also on error.
  void put(std::string body);

  std::unique_ptr<Client> http_;
  long timeout_ms_;
};

// A workload's `secrets:` entry: environment variable `name` gets the value of scope/key.
struct SecretBinding {
  std::string name, scope, key;
};

// The node agent's resolution: every binding's value by name. When any fails, throws one air::Error that
// lists every failing binding (name, scope/key and the server's reason; never a value).
std::map<std::string, std::string> resolve_secrets(SecretsClient& client, const std::vector<SecretBinding>& bindings);

}  // namespace air
