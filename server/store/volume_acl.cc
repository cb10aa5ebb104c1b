// SQLite tables of volume owners and grants (server/store/volume_acl.h).
#include "server/store/volume_acl.h"

#include <algorithm>

#include "server/store/sqlite.h"

namespace air::server {

VolumeAcl::VolumeAcl(const std::string& db_path) : db_(std::make_unique<sql::Db>(db_path)) {
  sql::exec(db_->get(), R"(
    CREATE TABLE IF NOT EXISTS volumes(
      key TEXT PRIMARY KEY, owner TEXT NOT NULL, created_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS uc_containers(
      key TEXT PRIMARY KEY, owner TEXT NOT NULL, created_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS volume_grants(
      key TEXT NOT NULL, principal TEXT NOT NULL, privilege TEXT NOT NULL, PRIMARY KEY(key, principal, privilege));
  )");
}

VolumeAcl::~VolumeAcl() = default;

int VolumeAcl::adopt(const std::vector<std::string>& keys, const std::string& owner, int64_t now_ms) {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& k : keys) {
    sql::Stmt st(db_->get(), "INSERT OR IGNORE INTO volumes(key, owner, created_ms) VALUES (?, ?, ?)");
    st.bind(1, k).bind(2, owner).bind(3, now_ms).run();
    n += sqlite3_changes(db_->get());
  }
  return n;
}

std::optional<VolumeRecord> VolumeAcl::find(const std::string& key) const {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT key, owner, created_ms FROM volumes WHERE key = ?");
  st.bind(1, key);
  if (!st.step()) return std::nullopt;
  return VolumeRecord{st.text(0), st.text(1), st.i64(2)};
}

VolumeRecord VolumeAcl::ensure(const std::string& key, const std::string& owner, int64_t now_ms) {
  adopt({key}, owner, now_ms);
  return *find(key);
}

std::vector<VolumeRecord> VolumeAcl::all() const {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT key, owner, created_ms FROM volumes ORDER BY key");
  std::vector<VolumeRecord> out;
  while (st.step()) out.push_back({st.text(0), st.text(1), st.i64(2)});
  return out;
}

std::optional<VolumeRecord> VolumeAcl::find_container(const std::string& key) const {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT key, owner, created_ms FROM uc_containers WHERE key = ?");
  st.bind(1, key);
  if (!st.step()) return std::nullopt;
  return VolumeRecord{st.text(0), st.text(1), st.i64(2)};
}

VolumeRecord VolumeAcl::ensure_container(const std::string& key, const std::string& owner, int64_t now_ms) {
  {
    std::lock_guard lock(mu_);
    sql::Stmt(db_->get(), "INSERT OR IGNORE INTO uc_containers(key, owner, created_ms) VALUES (?, ?, ?)")
        .bind(1, key).bind(2, owner).bind(3, now_ms).run();
  }
  return *find_container(key);
}

std::vector<VolumeRecord> VolumeAcl::containers() const {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT key, owner, created_ms FROM uc_containers ORDER BY key");
  std::vector<VolumeRecord> out;
  while (st.step()) out.push_back({st.text(0), st.text(1), st.i64(2)});
  return out;
}

void VolumeAcl::seed(const std::string& admin, int64_t now_ms) {
  if (!find_container("main")) {
    ensure_container("main", admin, now_ms);
    change("main", "users", {kUseCatalog, kCreateSchema}, {});
  }
  if (!find_container("main/default")) {
    ensure_container("main/default", admin, now_ms);
    change("main/default", "users", {kUseSchema}, {});
  }
  for (const auto& v : all()) {  // by key: a schema's first volume comes first
    std::string c = v.key.substr(0, v.key.find('/')), s = v.key.substr(0, v.key.rfind('/'));
    ensure_container(c, admin, now_ms);
    ensure_container(s, v.owner, now_ms);
  }
}

const std::vector<std::string>& privileges_for_depth(int depth) {
  static const std::vector<std::string> catalog{kUseCatalog, kCreateSchema, kUseSchema, kCreateVolume};
  static const std::vector<std::string> schema{kUseSchema, kCreateVolume};
  static const std::vector<std::string> volume{kReadVolume, kWriteVolume};
  return depth == 1 ? catalog : depth == 2 ? schema : volume;
}

std::vector<VolumeGrant> VolumeAcl::grants(const std::string& key) const {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT principal, privilege FROM volume_grants WHERE key = ? ORDER BY principal, privilege");
  st.bind(1, key);
  std::vector<VolumeGrant> out;
  while (st.step()) {
    if (out.empty() || out.back().principal != st.text(0)) out.push_back({st.text(0), {}});
    out.back().privileges.push_back(st.text(1));
  }
  return out;
}

void VolumeAcl::change(const std::string& key, const std::string& principal, const std::vector<std::string>& add,
                       const std::vector<std::string>& remove) {
  std::lock_guard lock(mu_);
  for (const auto& p : add)
    sql::Stmt(db_->get(), "INSERT OR IGNORE INTO volume_grants(key, principal, privilege) VALUES (?, ?, ?)")
        .bind(1, key).bind(2, principal).bind(3, p).run();
  for (const auto& p : remove)
    sql::Stmt(db_->get(), "DELETE FROM volume_grants WHERE key = ? AND principal = ? AND privilege = ?")
        .bind(1, key).bind(2, principal).bind(3, p).run();
}

std::set<std::string> VolumeAcl::granted(const std::string& key, const std::vector<std::string>& principals) const {
  std::set<std::string> out;
  for (const auto& g : grants(key))
    if (std::find(principals.begin(), principals.end(), g.principal) != principals.end())
      out.insert(g.privileges.begin(), g.privileges.end());
  return out;
}

std::optional<std::string> volume_key_from_full_name(const std::string& full_name) {
  return securable_key_from_full_name(full_name, 3);
}

std::optional<std::string> securable_key_from_full_name(const std::string& full_name, int want) {
  if (full_name.empty()) return std::nullopt;
  std::string key;
  int parts = 1;
  for (char c : full_name) {
    if (c == '.') ++parts, c = '/';
    else if (c == '/') return std::nullopt;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (parts != want || key.front() == '/' || key.back() == '/' || key.find("//") != std::string::npos) return std::nullopt;
  return key;
}

std::string volume_full_name(const std::string& key) {
  std::string s = key;
  std::replace(s.begin(), s.end(), '/', '.');
  return s;
}

}  // namespace air::server
