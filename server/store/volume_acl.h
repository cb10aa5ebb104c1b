// Who owns each volume and who was granted what on it (Unity Catalog's model: the creator owns a volume,
// READ_VOLUME and WRITE_VOLUME are granted to users or groups), in the workspace's SQLite database.
// The rule that reads these facts is server/workspace/access.h; docs/security.md is the table.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace air::server {

namespace sql { class Db; }

inline constexpr const char* kReadVolume = "READ_VOLUME";
inline constexpr const char* kWriteVolume = "WRITE_VOLUME";
// Catalog and schema privileges (Unity Catalog's names). A grant on a catalog holds for every schema in it.
inline constexpr const char* kUseCatalog = "USE_CATALOG";
inline constexpr const char* kCreateSchema = "CREATE_SCHEMA";
inline constexpr const char* kUseSchema = "USE_SCHEMA";
inline constexpr const char* kCreateVolume = "CREATE_VOLUME";

// The privileges a securable of this depth takes (1: catalog, 2: schema, 3: volume), in grant order.
const std::vector<std::string>& privileges_for_depth(int depth);

// A volume's, a schema's or a catalog's record (the same shape: who owns it since when).
struct VolumeRecord {
  std::string key;    // "catalog/schema/volume" (a schema: "catalog/schema", a catalog: "catalog")
  std::string owner;  // a user name
  int64_t created_ms = 0;
};

// One principal's privileges on a volume, sorted (Databricks' PrivilegeAssignment).
struct VolumeGrant {
  std::string principal;
  std::vector<std::string> privileges;
};

class VolumeAcl {
 public:
  // Opens its own connection and creates the tables when missing.
  explicit VolumeAcl(const std::string& db_path);
  ~VolumeAcl();

  // The migration for workspaces made before volumes had owners: every volume folder that has no record
  // (`keys`, found on disk) becomes `owner`'s. Returns how many were adopted.
  int adopt(const std::vector<std::string>& keys, const std::string& owner, int64_t now_ms);

  std::optional<VolumeRecord> find(const std::string& key) const;
  // The record of `key`, made with `owner` when there was none (the creator owns the volume).
  VolumeRecord ensure(const std::string& key, const std::string& owner, int64_t now_ms);
  std::vector<VolumeRecord> all() const;  // by key

  // Catalogs ("c") and schemas ("c/s"): their owners (Unity Catalog's securables above a volume).
  std::optional<VolumeRecord> find_container(const std::string& key) const;
  VolumeRecord ensure_container(const std::string& key, const std::string& owner, int64_t now_ms);
  std::vector<VolumeRecord> containers() const;  // by key: catalogs and schemas
  // A workspace's catalog `main` and schema `main.default` (docs/volumes.md "Catalogs and schemas"): made
  // on the first start as `admin`'s, with USE_CATALOG and CREATE_SCHEMA on main and USE_SCHEMA on
  // main.default granted to `users` (CREATE_VOLUME in main.default only by grant). Catalogs and schemas of
  // the volumes already on the storage are adopted: a schema by the owner of its first volume, a catalog by
  // `admin`. Idempotent: what exists is left as it is.
  void seed(const std::string& admin, int64_t now_ms);

  // Grants on any securable: `key` is a volume's, a schema's or a catalog's (the depth tells which).
  std::vector<VolumeGrant> grants(const std::string& key) const;  // by principal
  // Adds then removes privileges of one principal (PATCH .../permissions: one "changes" entry).
  void change(const std::string& key, const std::string& principal, const std::vector<std::string>& add,
              const std::vector<std::string>& remove);
  // The privileges any of `principals` holds on `key` through grants (the owner's are not included).
  std::set<std::string> granted(const std::string& key, const std::vector<std::string>& principals) const;

 private:
  std::unique_ptr<sql::Db> db_;
  mutable std::mutex mu_;
};

// "main.default.v" <-> "main/default/v"; nullopt when it is not three non-empty dot-separated names.
std::optional<std::string> volume_key_from_full_name(const std::string& full_name);
// The same for `parts` names (1: a catalog, 2: a schema).
std::optional<std::string> securable_key_from_full_name(const std::string& full_name, int parts);
std::string volume_full_name(const std::string& key);

}  // namespace air::server
