// Secret scopes and values in the workspace's SQLite database. Values are sealed with AES-256-GCM under
// the master key (a fresh 96-bit nonce per write; scope, key and kind bound in as associated data), so
// the database file never holds a value in clear and a row moved to another scope/key fails to open.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "server/store/master_key.h"

namespace air::server {

namespace sql { class Db; }

// Creates the secret tables when missing (additive and idempotent: safe to call on every start).
void migrate_secrets(sqlite3* db);

// A failure with a Databricks error code (RESOURCE_DOES_NOT_EXIST, RESOURCE_ALREADY_EXISTS,
// INVALID_PARAMETER_VALUE, RESOURCE_LIMIT_EXCEEDED). Messages name scopes and keys, never values.
class SecretError : public Error {
 public:
  SecretError(std::string code, std::string message)
      : Error(std::move(message), {}, kExitFailed), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

struct SecretRef {
  std::string scope, key;
  bool operator==(const SecretRef&) const = default;
};

struct SecretMetadata {
  std::string key;
  int64_t last_updated_timestamp = 0;  // ms since the epoch
};

struct SecretValue {
  std::string bytes;
  bool is_bytes = false;  // stored through bytes_value rather than string_value
};

// Databricks' documented limits.
constexpr size_t kMaxSecretValueBytes = 128 * 1024;
constexpr size_t kMaxNameLength = 128;
constexpr size_t kMaxScopes = 1000;
constexpr size_t kMaxSecretsPerScope = 1000;

// Scope names: letters, digits, '-', '_', '.', '@'; 1-128. Keys: letters, digits, '-', '_', '.'; 1-128.
bool valid_scope_name(const std::string& s);
bool valid_secret_key(const std::string& s);
// READ=1, WRITE=2, MANAGE=3; 0 for anything else.
int secret_permission_rank(const std::string& permission);

class SecretStore {
 public:
  // Opens its own connection to the workspace database (WAL), so it is independent of the server's
  // connection and thread-safe on its own; creates the tables when missing.
  SecretStore(const std::string& db_path, MasterKey key);
  ~SecretStore();

  // `creator` (when given) gets MANAGE on the new scope, as on Databricks.
  void create_scope(const std::string& scope, const std::string& creator = {});
  std::vector<std::string> list_scopes();  // sorted by name
  void delete_scope(const std::string& scope);  // and every secret in it

  void put_secret(const std::string& scope, const std::string& key, const std::string& value, bool is_bytes);
  std::vector<SecretMetadata> list_secrets(const std::string& scope);  // sorted by key
  SecretValue get_secret(const std::string& scope, const std::string& key);
  void delete_secret(const std::string& scope, const std::string& key);

  bool exists(const SecretRef& ref);

  // Scope ACLs (Databricks' READ < WRITE < MANAGE); a principal is a user or group name.
  void put_acl(const std::string& scope, const std::string& principal, const std::string& permission);
  std::optional<std::string> get_acl(const std::string& scope, const std::string& principal);
  std::vector<std::pair<std::string, std::string>> list_acls(const std::string& scope);  // by principal
  void delete_acl(const std::string& scope, const std::string& principal);
  // The highest permission any of `principals` holds on the scope ("" for none; a missing scope is none).
  std::string permission(const std::string& scope, const std::vector<std::string>& principals);
  // The refs (in the given order, without repeats) whose scope or key does not exist: `air run` lists
  // them all at once.
  std::vector<SecretRef> missing(const std::vector<SecretRef>& refs);

 private:
  int64_t scope_id(const std::string& scope, std::string* canonical_name);

  std::unique_ptr<sql::Db> db_;
  MasterKey key_;
  std::mutex mu_;
};

}  // namespace air::server
