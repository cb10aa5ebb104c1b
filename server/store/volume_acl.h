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

struct VolumeRecord {
  std::string key;    // "catalog/schema/volume"
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
std::string volume_full_name(const std::string& key);

}  // namespace air::server
