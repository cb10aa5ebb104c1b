// SecretStore: SQLite rows + AES-256-GCM (OpenSSL EVP). A sealed value is nonce(12) || ciphertext || tag(16).
#include "server/store/secrets.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "server/store/sqlite.h"

namespace air::server {

namespace {

constexpr int kNonceBytes = 12;
constexpr int kTagBytes = 16;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Binds the ciphertext to where it lives: a row copied to another scope or key, or flipped between
// string and bytes, fails authentication instead of decrypting.
std::string aad_for(const std::string& scope, const std::string& key, bool is_bytes) {
  std::string aad = "air-secret-v1";
  aad += '\0';
  aad += scope;
  aad += '\0';
  aad += key;
  aad += '\0';
  aad += is_bytes ? "bytes" : "string";
  return aad;
}

struct CipherCtx {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~CipherCtx() { EVP_CIPHER_CTX_free(ctx); }
};

std::string seal(const MasterKey& mk, const std::string& aad, const std::string& plain) {
  std::string out(kNonceBytes + plain.size() + kTagBytes, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(o, kNonceBytes) != 1) throw Error("cannot encrypt secret: the OS random source failed");
  CipherCtx c;
  int len = 0, fin = 0;
  bool ok = c.ctx && EVP_EncryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
            EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
            EVP_EncryptInit_ex(c.ctx, nullptr, nullptr, mk.data(), o) == 1 &&
            EVP_EncryptUpdate(c.ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(aad.data()),
                              static_cast<int>(aad.size())) == 1 &&
            EVP_EncryptUpdate(c.ctx, o + kNonceBytes, &len, reinterpret_cast<const unsigned char*>(plain.data()),
                              static_cast<int>(plain.size())) == 1 &&
            EVP_EncryptFinal_ex(c.ctx, o + kNonceBytes + len, &fin) == 1 &&
            EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, o + kNonceBytes + plain.size()) == 1;
  if (!ok) throw Error("cannot encrypt secret: OpenSSL AES-256-GCM failed");
  return out;
}

std::string open_sealed(const MasterKey& mk, const std::string& aad, const std::string& sealed,
                        const std::string& where) {
  const auto fail = [&] {
    return Error(fmt::format("secret {} cannot be decrypted: the master key does not match or the row was "
                             "altered",
                             where),
                 "restore the workspace's secrets.key that was in use when the secret was written");
  };
  if (sealed.size() < static_cast<size_t>(kNonceBytes + kTagBytes)) throw fail();
  size_t n = sealed.size() - kNonceBytes - kTagBytes;
  auto* s = reinterpret_cast<const unsigned char*>(sealed.data());
  std::string plain(n, '\0');
  auto* p = reinterpret_cast<unsigned char*>(plain.data());
  CipherCtx c;
  int len = 0, fin = 0;
  std::string tag = sealed.substr(kNonceBytes + n);
  bool ok = c.ctx && EVP_DecryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
            EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
            EVP_DecryptInit_ex(c.ctx, nullptr, nullptr, mk.data(), s) == 1 &&
            EVP_DecryptUpdate(c.ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(aad.data()),
                              static_cast<int>(aad.size())) == 1 &&
            EVP_DecryptUpdate(c.ctx, p, &len, s + kNonceBytes, static_cast<int>(n)) == 1 &&
            EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1 &&
            EVP_DecryptFinal_ex(c.ctx, p + len, &fin) == 1;
  if (!ok) {
    OPENSSL_cleanse(plain.data(), plain.size());
    throw fail();
  }
  return plain;
}

bool valid_name(const std::string& s, bool allow_at) {
  if (s.empty() || s.size() > kMaxNameLength) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || c == '.' || (allow_at && c == '@');
    if (!ok) return false;
  }
  return true;
}

void require_scope_name(const std::string& scope) {
  if (!valid_scope_name(scope))
    throw SecretError("INVALID_PARAMETER_VALUE",
                      fmt::format("scope name '{}' is invalid: use 1-{} letters, digits, '-', '_', '.' or '@'",
                                  scope.substr(0, 200), kMaxNameLength));
}

void require_key_name(const std::string& key) {
  if (!valid_secret_key(key))
    throw SecretError("INVALID_PARAMETER_VALUE",
                      fmt::format("secret key '{}' is invalid: use 1-{} letters, digits, '-', '_' or '.'",
                                  key.substr(0, 200), kMaxNameLength));
}

}  // namespace

bool valid_scope_name(const std::string& s) { return valid_name(s, true); }
bool valid_secret_key(const std::string& s) { return valid_name(s, false); }

int secret_permission_rank(const std::string& p) {
  return p == "READ" ? 1 : p == "WRITE" ? 2 : p == "MANAGE" ? 3 : 0;
}

void migrate_secrets(sqlite3* db) {
  sql::exec(db, R"(
    CREATE TABLE IF NOT EXISTS secret_scopes(
      id INTEGER PRIMARY KEY,
      name TEXT NOT NULL UNIQUE COLLATE NOCASE,
      created_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS secret_values(
      scope_id INTEGER NOT NULL,
      key TEXT NOT NULL,
      is_bytes INTEGER NOT NULL,
      sealed BLOB NOT NULL,
      updated_ms INTEGER NOT NULL,
      PRIMARY KEY(scope_id, key));
    CREATE TABLE IF NOT EXISTS secret_acls(
      scope_id INTEGER NOT NULL,
      principal TEXT NOT NULL,
      permission TEXT NOT NULL,
      PRIMARY KEY(scope_id, principal));
  )");
}

SecretStore::SecretStore(const std::string& db_path, MasterKey key)
    : db_(std::make_unique<sql::Db>(db_path)), key_(std::move(key)) {
  migrate_secrets(db_->get());
}

SecretStore::~SecretStore() = default;

int64_t SecretStore::scope_id(const std::string& scope, std::string* canonical_name) {
  require_scope_name(scope);
  sql::Stmt st(db_->get(), "SELECT id, name FROM secret_scopes WHERE name = ?");
  st.bind(1, scope);
  if (!st.step())
    throw SecretError("RESOURCE_DOES_NOT_EXIST", fmt::format("scope '{}' does not exist", scope));
  if (canonical_name) *canonical_name = st.text(1);
  return st.i64(0);
}

void SecretStore::create_scope(const std::string& scope, const std::string& creator) {
  require_scope_name(scope);
  std::lock_guard lock(mu_);
  sql::Transaction tx(db_->get());
  sql::Stmt exists(db_->get(), "SELECT name FROM secret_scopes WHERE name = ?");
  exists.bind(1, scope);
  if (exists.step())
    throw SecretError("RESOURCE_ALREADY_EXISTS", fmt::format("scope '{}' already exists", exists.text(0)));
  sql::Stmt count(db_->get(), "SELECT COUNT(*) FROM secret_scopes");
  count.step();
  if (static_cast<size_t>(count.i64(0)) >= kMaxScopes)
    throw SecretError("RESOURCE_LIMIT_EXCEEDED", fmt::format("the workspace already has {} scopes", kMaxScopes));
  sql::Stmt ins(db_->get(), "INSERT INTO secret_scopes(name, created_ms) VALUES(?, ?)");
  ins.bind(1, scope).bind(2, now_ms()).run();
  if (!creator.empty())
    sql::Stmt(db_->get(), "INSERT INTO secret_acls(scope_id, principal, permission) VALUES(?, ?, 'MANAGE')")
        .bind(1, int64_t{sqlite3_last_insert_rowid(db_->get())}).bind(2, creator).run();
  tx.commit();
}

std::vector<std::string> SecretStore::list_scopes() {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT name FROM secret_scopes ORDER BY name");
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.text(0));
  return out;
}

void SecretStore::delete_scope(const std::string& scope) {
  std::lock_guard lock(mu_);
  sql::Transaction tx(db_->get());
  int64_t id = scope_id(scope, nullptr);
  sql::Stmt(db_->get(), "DELETE FROM secret_values WHERE scope_id = ?").bind(1, id).run();
  sql::Stmt(db_->get(), "DELETE FROM secret_acls WHERE scope_id = ?").bind(1, id).run();
  sql::Stmt(db_->get(), "DELETE FROM secret_scopes WHERE id = ?").bind(1, id).run();
  tx.commit();
}

void SecretStore::put_secret(const std::string& scope, const std::string& key, const std::string& value,
                             bool is_bytes) {
  require_key_name(key);
  if (value.size() > kMaxSecretValueBytes)
    throw SecretError("INVALID_PARAMETER_VALUE",
                      fmt::format("the value of secret '{}' in scope '{}' is {} bytes, over the {} byte limit",
                                  key, scope, value.size(), kMaxSecretValueBytes));
  std::lock_guard lock(mu_);
  sql::Transaction tx(db_->get());
  std::string canonical;
  int64_t id = scope_id(scope, &canonical);
  sql::Stmt have(db_->get(), "SELECT COUNT(*), SUM(key = ?) FROM secret_values WHERE scope_id = ?");
  have.bind(1, key).bind(2, id).step();
  if (have.i64(1) == 0 && static_cast<size_t>(have.i64(0)) >= kMaxSecretsPerScope)
    throw SecretError("RESOURCE_LIMIT_EXCEEDED",
                      fmt::format("scope '{}' already holds {} secrets", canonical, kMaxSecretsPerScope));
  std::string sealed = seal(key_, aad_for(canonical, key, is_bytes), value);
  sql::Stmt up(db_->get(),
               "INSERT INTO secret_values(scope_id, key, is_bytes, sealed, updated_ms) VALUES(?, ?, ?, ?, ?) "
               "ON CONFLICT(scope_id, key) DO UPDATE SET is_bytes = excluded.is_bytes, sealed = excluded.sealed, "
               "updated_ms = excluded.updated_ms");
  up.bind(1, id).bind(2, key).bind(3, int64_t{is_bytes}).bind_blob(4, sealed.data(), sealed.size());
  up.bind(5, now_ms()).run();
  tx.commit();
}

std::vector<SecretMetadata> SecretStore::list_secrets(const std::string& scope) {
  std::lock_guard lock(mu_);
  int64_t id = scope_id(scope, nullptr);
  sql::Stmt st(db_->get(), "SELECT key, updated_ms FROM secret_values WHERE scope_id = ? ORDER BY key");
  st.bind(1, id);
  std::vector<SecretMetadata> out;
  while (st.step()) out.push_back({st.text(0), st.i64(1)});
  return out;
}

SecretValue SecretStore::get_secret(const std::string& scope, const std::string& key) {
  require_key_name(key);
  std::lock_guard lock(mu_);
  std::string canonical;
  int64_t id = scope_id(scope, &canonical);
  sql::Stmt st(db_->get(), "SELECT is_bytes, sealed FROM secret_values WHERE scope_id = ? AND key = ?");
  st.bind(1, id).bind(2, key);
  if (!st.step())
    throw SecretError("RESOURCE_DOES_NOT_EXIST",
                      fmt::format("secret '{}' does not exist in scope '{}'", key, canonical));
  bool is_bytes = st.i64(0) != 0;
  std::string where = canonical + "/" + key;
  return {open_sealed(key_, aad_for(canonical, key, is_bytes), st.blob(1), where), is_bytes};
}

void SecretStore::delete_secret(const std::string& scope, const std::string& key) {
  require_key_name(key);
  std::lock_guard lock(mu_);
  sql::Transaction tx(db_->get());
  std::string canonical;
  int64_t id = scope_id(scope, &canonical);
  sql::Stmt del(db_->get(), "DELETE FROM secret_values WHERE scope_id = ? AND key = ?");
  del.bind(1, id).bind(2, key).run();
  if (sqlite3_changes(db_->get()) == 0)
    throw SecretError("RESOURCE_DOES_NOT_EXIST",
                      fmt::format("secret '{}' does not exist in scope '{}'", key, canonical));
  tx.commit();
}

bool SecretStore::exists(const SecretRef& ref) {
  if (!valid_scope_name(ref.scope) || !valid_secret_key(ref.key)) return false;
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(),
               "SELECT 1 FROM secret_values v JOIN secret_scopes s ON s.id = v.scope_id "
               "WHERE s.name = ? AND v.key = ?");
  st.bind(1, ref.scope).bind(2, ref.key);
  return st.step();
}

std::vector<SecretRef> SecretStore::missing(const std::vector<SecretRef>& refs) {
  std::vector<SecretRef> out;
  for (const auto& r : refs) {
    bool seen = false;
    for (const auto& o : out) seen = seen || o == r;
    if (!seen && !exists(r)) out.push_back(r);
  }
  return out;
}

void SecretStore::put_acl(const std::string& scope, const std::string& principal, const std::string& permission) {
  if (!secret_permission_rank(permission))
    throw SecretError("INVALID_PARAMETER_VALUE",
                      fmt::format("permission '{}' is invalid: use READ, WRITE or MANAGE", permission.substr(0, 100)));
  if (principal.empty() || principal.size() > 128)
    throw SecretError("INVALID_PARAMETER_VALUE", "principal must be a user or group name of 1-128 characters");
  std::lock_guard lock(mu_);
  int64_t id = scope_id(scope, nullptr);
  sql::Stmt(db_->get(), "INSERT INTO secret_acls(scope_id, principal, permission) VALUES(?, ?, ?) "
                        "ON CONFLICT(scope_id, principal) DO UPDATE SET permission = excluded.permission")
      .bind(1, id).bind(2, principal).bind(3, permission).run();
}

std::optional<std::string> SecretStore::get_acl(const std::string& scope, const std::string& principal) {
  std::lock_guard lock(mu_);
  int64_t id = scope_id(scope, nullptr);
  sql::Stmt st(db_->get(), "SELECT permission FROM secret_acls WHERE scope_id = ? AND principal = ?");
  st.bind(1, id).bind(2, principal);
  if (!st.step()) return std::nullopt;
  return st.text(0);
}

std::vector<std::pair<std::string, std::string>> SecretStore::list_acls(const std::string& scope) {
  std::lock_guard lock(mu_);
  int64_t id = scope_id(scope, nullptr);
  sql::Stmt st(db_->get(), "SELECT principal, permission FROM secret_acls WHERE scope_id = ? ORDER BY principal");
  st.bind(1, id);
  std::vector<std::pair<std::string, std::string>> out;
  while (st.step()) out.emplace_back(st.text(0), st.text(1));
  return out;
}

void SecretStore::delete_acl(const std::string& scope, const std::string& principal) {
  std::lock_guard lock(mu_);
  std::string canonical;
  int64_t id = scope_id(scope, &canonical);
  sql::Stmt(db_->get(), "DELETE FROM secret_acls WHERE scope_id = ? AND principal = ?").bind(1, id).bind(2, principal).run();
  if (sqlite3_changes(db_->get()) == 0)
    throw SecretError("RESOURCE_DOES_NOT_EXIST",
                      fmt::format("scope '{}' has no ACL for principal '{}'", canonical, principal));
}

std::string SecretStore::permission(const std::string& scope, const std::vector<std::string>& principals) {
  if (!valid_scope_name(scope)) return "";
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT a.principal, a.permission FROM secret_acls a JOIN secret_scopes s ON s.id = a.scope_id "
                           "WHERE s.name = ?");
  st.bind(1, scope);
  std::string best;
  while (st.step())
    if (std::find(principals.begin(), principals.end(), st.text(0)) != principals.end() &&
        secret_permission_rank(st.text(1)) > secret_permission_rank(best))
      best = st.text(1);
  return best;
}

}  // namespace air::server
