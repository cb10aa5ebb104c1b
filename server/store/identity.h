// Who uses the workspace: users, groups, personal access tokens (hashed) and the audit log, in the
// workspace's SQLite database. Users, groups and tokens are also kept in memory (write-through), so
// authenticating a request is a map lookup. Thread-safe. The model: docs/security.md.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/base/error.h"

namespace air::server {

namespace sql { class Db; }

// A failure with a Databricks error code (RESOURCE_DOES_NOT_EXIST, RESOURCE_ALREADY_EXISTS,
// INVALID_PARAMETER_VALUE). Messages name users, groups and token ids, never a token.
class IdentityError : public Error {
 public:
  IdentityError(std::string code, std::string message)
      : Error(std::move(message), {}, kExitFailed), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// The group every workspace admin belongs to, and the group every active user is in (Databricks' names).
inline constexpr const char* kAdminsGroup = "admins";
inline constexpr const char* kUsersGroup = "users";
inline constexpr const char* kBootstrapTokenComment = "bootstrap admin token (air server; replaced at each start)";

struct User {
  int64_t id = 0;
  std::string user_name, display_name;
  bool active = true;
  int64_t created_ms = 0;
};

struct Group {
  int64_t id = 0;
  std::string name;
  std::set<std::string> members;  // user names
};

struct TokenInfo {
  std::string token_id;  // public id (Databricks': shown by token/list, used by token/delete)
  std::string user_name;
  std::string comment;
  int64_t created_ms = 0;
  int64_t expiry_ms = -1;  // -1: never
};

struct AuditEntry {
  int64_t id = 0, time_ms = 0;
  std::string user;    // user name, "node:<run>:<attempt>", or "" (no valid token)
  std::string method, route, object;
  int status = 0;
};

struct AuditQuery {
  std::string user;      // empty: everyone
  int64_t since_ms = 0;
  int limit = 1000;
};

// User and group names: 1-128 of letters, digits, '.', '_', '-', '@', '+'.
bool valid_principal_name(const std::string& s);

class IdentityStore {
 public:
  // Opens its own connection to the workspace database and creates the tables when missing; makes sure
  // the `admins` group and the bootstrap admin exist. The bootstrap admin (whom `air server`'s printed
  // token acts as) is named on the database's first start and kept: `bootstrap_admin` names it then.
  IdentityStore(const std::string& db_path, const std::string& bootstrap_admin);
  const std::string& bootstrap_admin() const { return bootstrap_; }
  ~IdentityStore();

  User add_user(const std::string& user_name, const std::string& display_name, int64_t now_ms);
  std::optional<User> user(const std::string& user_name) const;
  std::optional<User> user_by_id(int64_t id) const;
  std::vector<User> users() const;  // by name
  // Deactivating also deletes the user's tokens.
  void set_active(const std::string& user_name, bool active);
  void delete_user(const std::string& user_name);  // and its tokens and group memberships
  bool is_admin(const std::string& user_name) const;
  // The groups a user is in (`users` for every active user, `admins` for admins); empty for unknown.
  std::vector<std::string> groups_of(const std::string& user_name) const;

  Group add_group(const std::string& name);
  std::optional<Group> group(const std::string& name) const;
  std::optional<Group> group_by_id(int64_t id) const;
  std::vector<Group> groups() const;
  void delete_group(const std::string& name);
  void add_member(const std::string& group, const std::string& user_name);
  void remove_member(const std::string& group, const std::string& user_name);

  // A token for an active user: its hash is stored, the clear token never.
  TokenInfo add_token(const std::string& user_name, const std::string& sha256_hex, const std::string& comment,
                      int64_t now_ms, int64_t expiry_ms);
  // The bootstrap admin's token (what `air server` writes to server.json): one at a time, replaced at every
  // start (the one before is deleted), listed among the bootstrap admin's tokens and revocable like any.
  TokenInfo replace_bootstrap_token(const std::string& sha256_hex, int64_t now_ms);
  std::optional<TokenInfo> token_by_hash(const std::string& sha256_hex) const;
  std::optional<TokenInfo> token(const std::string& token_id) const;
  std::vector<TokenInfo> tokens(const std::string& user_name = {}) const;  // empty: every user's
  bool delete_token(const std::string& token_id);

  void audit(const AuditEntry& e);
  std::vector<AuditEntry> audit_log(const AuditQuery& q) const;  // oldest first
  // Deletes the entries older than before_ms (one indexed range delete); returns how many.
  int64_t prune_audit(int64_t before_ms);

 private:
  void load();
  void require_user(const std::string& user_name) const;

  std::unique_ptr<sql::Db> db_;
  std::string bootstrap_;
  mutable std::mutex mu_;
  std::map<std::string, User> users_;
  std::map<std::string, Group> groups_;
  std::map<std::string, TokenInfo> tokens_;  // sha256 hex -> token
};

}  // namespace air::server
