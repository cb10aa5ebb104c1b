// SQLite tables of users, groups, tokens and the audit log (server/store/identity.h), with the in-memory
// copies authentication reads.
#include "server/store/identity.h"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <algorithm>

#include "server/store/sqlite.h"

namespace air::server {

namespace {

void migrate(sqlite3* db) {
  sql::exec(db, R"(
    CREATE TABLE IF NOT EXISTS users(
      id INTEGER PRIMARY KEY, user_name TEXT NOT NULL UNIQUE, display_name TEXT NOT NULL,
      active INTEGER NOT NULL, created_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS user_groups(
      id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
    CREATE TABLE IF NOT EXISTS group_members(
      group_name TEXT NOT NULL, user_name TEXT NOT NULL, PRIMARY KEY(group_name, user_name));
    CREATE TABLE IF NOT EXISTS user_tokens(
      token_id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, user_name TEXT NOT NULL, comment TEXT NOT NULL,
      created_ms INTEGER NOT NULL, expiry_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS audit_log(
      id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, user TEXT NOT NULL, method TEXT NOT NULL,
      route TEXT NOT NULL, object TEXT NOT NULL, status INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS audit_log_time ON audit_log(time_ms);
    CREATE TABLE IF NOT EXISTS identity_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
  )");
}

std::string new_token_id() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw Error("cannot generate a token id");
  std::string s;
  for (unsigned char c : b) s += fmt::format("{:02x}", c);
  return s;
}

IdentityError not_found(const std::string& what) { return IdentityError("RESOURCE_DOES_NOT_EXIST", what); }

void require_name(const std::string& kind, const std::string& name) {
  if (!valid_principal_name(name))
    throw IdentityError("INVALID_PARAMETER_VALUE",
                        fmt::format("{} name '{}' is invalid: use 1-128 letters, digits, '.', '_', '-', '@' or '+'",
                                    kind, name.substr(0, 200)));
}

}  // namespace

bool valid_principal_name(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-' && c != '@' && c != '+')
      return false;
  return true;
}

IdentityStore::IdentityStore(const std::string& db_path, const std::string& bootstrap_admin)
    : db_(std::make_unique<sql::Db>(db_path)) {
  migrate(db_->get());
  load();
  sql::Stmt meta(db_->get(), "SELECT value FROM identity_meta WHERE key = 'bootstrap_admin'");
  if (meta.step()) {
    bootstrap_ = meta.text(0);
  } else {
    bootstrap_ = valid_principal_name(bootstrap_admin) ? bootstrap_admin : "admin";
    sql::Stmt(db_->get(), "INSERT INTO identity_meta(key, value) VALUES ('bootstrap_admin', ?)").bind(1, bootstrap_).run();
  }
  if (!users_.count(bootstrap_)) add_user(bootstrap_, "Workspace admin", 0);
  if (!users_.at(bootstrap_).active) set_active(bootstrap_, true);
  if (!groups_.count(kAdminsGroup)) add_group(kAdminsGroup);
  if (!groups_.at(kAdminsGroup).members.count(bootstrap_)) add_member(kAdminsGroup, bootstrap_);
}

IdentityStore::~IdentityStore() = default;

void IdentityStore::load() {
  sqlite3* db = db_->get();
  sql::Stmt u(db, "SELECT id, user_name, display_name, active, created_ms FROM users");
  while (u.step()) users_[u.text(1)] = User{u.i64(0), u.text(1), u.text(2), u.i64(3) != 0, u.i64(4)};
  sql::Stmt g(db, "SELECT id, name FROM user_groups");
  while (g.step()) groups_[g.text(1)] = Group{g.i64(0), g.text(1), {}};
  sql::Stmt m(db, "SELECT group_name, user_name FROM group_members");
  while (m.step())
    if (auto it = groups_.find(m.text(0)); it != groups_.end()) it->second.members.insert(m.text(1));
  sql::Stmt t(db, "SELECT token_id, hash, user_name, comment, created_ms, expiry_ms FROM user_tokens");
  while (t.step()) tokens_[t.text(1)] = TokenInfo{t.text(0), t.text(2), t.text(3), t.i64(4), t.i64(5)};
}

void IdentityStore::require_user(const std::string& user_name) const {
  if (!users_.count(user_name)) throw not_found(fmt::format("user '{}' does not exist", user_name));
}

User IdentityStore::add_user(const std::string& user_name, const std::string& display_name, int64_t now_ms) {
  require_name("user", user_name);
  std::lock_guard lock(mu_);
  if (users_.count(user_name) || groups_.count(user_name))
    throw IdentityError("RESOURCE_ALREADY_EXISTS", fmt::format("a user or group named '{}' already exists", user_name));
  sql::Stmt st(db_->get(), "INSERT INTO users(user_name, display_name, active, created_ms) VALUES (?, ?, 1, ?)");
  st.bind(1, user_name).bind(2, display_name.empty() ? user_name : display_name).bind(3, now_ms).run();
  User u{int64_t{sqlite3_last_insert_rowid(db_->get())}, user_name, display_name.empty() ? user_name : display_name, true, now_ms};
  users_[user_name] = u;
  return u;
}

std::optional<User> IdentityStore::user(const std::string& user_name) const {
  std::lock_guard lock(mu_);
  auto it = users_.find(user_name);
  if (it == users_.end()) return std::nullopt;
  return it->second;
}

std::optional<User> IdentityStore::user_by_id(int64_t id) const {
  std::lock_guard lock(mu_);
  for (const auto& [n, u] : users_)
    if (u.id == id) return u;
  return std::nullopt;
}

std::vector<User> IdentityStore::users() const {
  std::lock_guard lock(mu_);
  std::vector<User> out;
  for (const auto& [n, u] : users_) out.push_back(u);
  return out;
}

void IdentityStore::set_active(const std::string& user_name, bool active) {
  std::lock_guard lock(mu_);
  require_user(user_name);
  if (!active && user_name == bootstrap_)
    throw IdentityError("INVALID_PARAMETER_VALUE", "the bootstrap admin cannot be deactivated");
  sql::Transaction tx(db_->get());
  sql::Stmt(db_->get(), "UPDATE users SET active = ? WHERE user_name = ?").bind(1, int64_t{active}).bind(2, user_name).run();
  if (!active) sql::Stmt(db_->get(), "DELETE FROM user_tokens WHERE user_name = ?").bind(1, user_name).run();
  tx.commit();
  users_[user_name].active = active;
  if (!active)
    for (auto it = tokens_.begin(); it != tokens_.end();)
      it = it->second.user_name == user_name ? tokens_.erase(it) : std::next(it);
}

void IdentityStore::delete_user(const std::string& user_name) {
  std::lock_guard lock(mu_);
  require_user(user_name);
  if (user_name == bootstrap_) throw IdentityError("INVALID_PARAMETER_VALUE", "the bootstrap admin cannot be deleted");
  sql::Transaction tx(db_->get());
  sql::Stmt(db_->get(), "DELETE FROM users WHERE user_name = ?").bind(1, user_name).run();
  sql::Stmt(db_->get(), "DELETE FROM user_tokens WHERE user_name = ?").bind(1, user_name).run();
  sql::Stmt(db_->get(), "DELETE FROM group_members WHERE user_name = ?").bind(1, user_name).run();
  tx.commit();
  users_.erase(user_name);
  for (auto& [n, g] : groups_) g.members.erase(user_name);
  for (auto it = tokens_.begin(); it != tokens_.end();)
    it = it->second.user_name == user_name ? tokens_.erase(it) : std::next(it);
}

bool IdentityStore::is_admin(const std::string& user_name) const {
  std::lock_guard lock(mu_);
  auto u = users_.find(user_name);
  auto g = groups_.find(kAdminsGroup);
  return u != users_.end() && u->second.active && g != groups_.end() && g->second.members.count(user_name);
}

std::vector<std::string> IdentityStore::groups_of(const std::string& user_name) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  auto u = users_.find(user_name);
  if (u == users_.end() || !u->second.active) return out;
  out.push_back(kUsersGroup);
  for (const auto& [n, g] : groups_)
    if (g.members.count(user_name)) out.push_back(n);
  return out;
}

Group IdentityStore::add_group(const std::string& name) {
  require_name("group", name);
  std::lock_guard lock(mu_);
  if (name == kUsersGroup || groups_.count(name) || users_.count(name))
    throw IdentityError("RESOURCE_ALREADY_EXISTS", fmt::format("a user or group named '{}' already exists", name));
  sql::Stmt(db_->get(), "INSERT INTO user_groups(name) VALUES (?)").bind(1, name).run();
  Group g{int64_t{sqlite3_last_insert_rowid(db_->get())}, name, {}};
  groups_[name] = g;
  return g;
}

std::optional<Group> IdentityStore::group(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = groups_.find(name);
  if (it == groups_.end()) return std::nullopt;
  return it->second;
}

std::optional<Group> IdentityStore::group_by_id(int64_t id) const {
  std::lock_guard lock(mu_);
  for (const auto& [n, g] : groups_)
    if (g.id == id) return g;
  return std::nullopt;
}

std::vector<Group> IdentityStore::groups() const {
  std::lock_guard lock(mu_);
  std::vector<Group> out;
  for (const auto& [n, g] : groups_) out.push_back(g);
  return out;
}

void IdentityStore::delete_group(const std::string& name) {
  std::lock_guard lock(mu_);
  if (!groups_.count(name)) throw not_found(fmt::format("group '{}' does not exist", name));
  if (name == kAdminsGroup) throw IdentityError("INVALID_PARAMETER_VALUE", "the admins group cannot be deleted");
  sql::Transaction tx(db_->get());
  sql::Stmt(db_->get(), "DELETE FROM user_groups WHERE name = ?").bind(1, name).run();
  sql::Stmt(db_->get(), "DELETE FROM group_members WHERE group_name = ?").bind(1, name).run();
  tx.commit();
  groups_.erase(name);
}

void IdentityStore::add_member(const std::string& group, const std::string& user_name) {
  std::lock_guard lock(mu_);
  auto g = groups_.find(group);
  if (g == groups_.end()) throw not_found(fmt::format("group '{}' does not exist", group));
  require_user(user_name);
  sql::Stmt(db_->get(), "INSERT OR IGNORE INTO group_members(group_name, user_name) VALUES (?, ?)")
      .bind(1, group).bind(2, user_name).run();
  g->second.members.insert(user_name);
}

void IdentityStore::remove_member(const std::string& group, const std::string& user_name) {
  std::lock_guard lock(mu_);
  auto g = groups_.find(group);
  if (g == groups_.end()) throw not_found(fmt::format("group '{}' does not exist", group));
  if (group == kAdminsGroup && user_name == bootstrap_)
    throw IdentityError("INVALID_PARAMETER_VALUE", "the bootstrap admin stays in the admins group");
  sql::Stmt(db_->get(), "DELETE FROM group_members WHERE group_name = ? AND user_name = ?")
      .bind(1, group).bind(2, user_name).run();
  g->second.members.erase(user_name);
}

TokenInfo IdentityStore::add_token(const std::string& user_name, const std::string& hash, const std::string& comment,
                                   int64_t now_ms, int64_t expiry_ms) {
  std::lock_guard lock(mu_);
  require_user(user_name);
  if (!users_[user_name].active)
    throw IdentityError("INVALID_PARAMETER_VALUE", fmt::format("user '{}' is deactivated", user_name));
  TokenInfo t{new_token_id(), user_name, comment, now_ms, expiry_ms};
  sql::Stmt(db_->get(), "INSERT INTO user_tokens(token_id, hash, user_name, comment, created_ms, expiry_ms) "
                        "VALUES (?, ?, ?, ?, ?, ?)")
      .bind(1, t.token_id).bind(2, hash).bind(3, user_name).bind(4, comment).bind(5, now_ms).bind(6, expiry_ms).run();
  tokens_[hash] = t;
  return t;
}

TokenInfo IdentityStore::replace_bootstrap_token(const std::string& hash, int64_t now_ms) {
  std::string old_id;
  {
    std::lock_guard lock(mu_);
    sql::Stmt st(db_->get(), "SELECT value FROM identity_meta WHERE key = 'bootstrap_token_id'");
    if (st.step()) old_id = st.text(0);
  }
  if (!old_id.empty()) delete_token(old_id);
  TokenInfo t = add_token(bootstrap_, hash, kBootstrapTokenComment, now_ms, -1);
  std::lock_guard lock(mu_);
  sql::Stmt(db_->get(), "INSERT OR REPLACE INTO identity_meta(key, value) VALUES ('bootstrap_token_id', ?)")
      .bind(1, t.token_id).run();
  return t;
}

std::optional<TokenInfo> IdentityStore::token_by_hash(const std::string& hash) const {
  std::lock_guard lock(mu_);
  auto it = tokens_.find(hash);
  if (it == tokens_.end()) return std::nullopt;
  return it->second;
}

std::optional<TokenInfo> IdentityStore::token(const std::string& token_id) const {
  std::lock_guard lock(mu_);
  for (const auto& [h, t] : tokens_)
    if (t.token_id == token_id) return t;
  return std::nullopt;
}

std::vector<TokenInfo> IdentityStore::tokens(const std::string& user_name) const {
  std::lock_guard lock(mu_);
  std::vector<TokenInfo> out;
  for (const auto& [h, t] : tokens_)
    if (user_name.empty() || t.user_name == user_name) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.created_ms, a.token_id) < std::tie(b.created_ms, b.token_id);
  });
  return out;
}

bool IdentityStore::delete_token(const std::string& token_id) {
  std::lock_guard lock(mu_);
  for (auto it = tokens_.begin(); it != tokens_.end(); ++it)
    if (it->second.token_id == token_id) {
      sql::Stmt(db_->get(), "DELETE FROM user_tokens WHERE token_id = ?").bind(1, token_id).run();
      tokens_.erase(it);
      return true;
    }
  return false;
}

void IdentityStore::audit(const AuditEntry& e) {
  sql::Stmt(db_->get(), "INSERT INTO audit_log(time_ms, user, method, route, object, status) VALUES (?, ?, ?, ?, ?, ?)")
      .bind(1, e.time_ms).bind(2, e.user).bind(3, e.method).bind(4, e.route).bind(5, e.object)
      .bind(6, int64_t{e.status}).run();
}

int64_t IdentityStore::prune_audit(int64_t before_ms) {
  sql::Stmt(db_->get(), "DELETE FROM audit_log WHERE time_ms < ?").bind(1, before_ms).run();  // audit_log_time index
  return sqlite3_changes(db_->get());
}

std::vector<AuditEntry> IdentityStore::audit_log(const AuditQuery& q) const {
  // The newest `limit` entries, returned oldest first.
  sql::Stmt st(db_->get(), "SELECT id, time_ms, user, method, route, object, status FROM audit_log "
                           "WHERE time_ms >= ? AND (? = '' OR user = ?) ORDER BY id DESC LIMIT ?");
  st.bind(1, q.since_ms).bind(2, q.user).bind(3, q.user).bind(4, int64_t{std::max(1, q.limit)});
  std::vector<AuditEntry> out;
  while (st.step())
    out.push_back(AuditEntry{st.i64(0), st.i64(1), st.text(2), st.text(3), st.text(4), st.text(5),
                             static_cast<int>(st.i64(6))});
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace air::server
