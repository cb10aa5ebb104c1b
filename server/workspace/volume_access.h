// VolumeAccess: who may use which volume, the workspace's side of server/store/volume_acl.h (the rule itself
// is access.h; docs/security.md, docs/volumes.md). It owns the volume owners and grants, reads the volume
// storage and the identity store, and touches no run: the Files and Unity Catalog routes take it alone (with
// Auth), and admission asks it at submit.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "server/store/identity.h"
#include "server/store/volume_acl.h"
#include "server/store/volumes.h"
#include "server/workspace/access.h"

namespace air::server {

class VolumeAccess {
 public:
  VolumeAccess(const std::string& db_path, VolumeStore& volumes, IdentityStore& identity,
               std::function<int64_t()> clock);

  VolumeStore& volumes() { return volumes_; }
  // Volume owners and grants (server/store/volume_acl.h).
  VolumeAcl& acl() { return *acl_; }

  // Volume folders on the storage from before owners existed become the bootstrap admin's (with main,
  // main.default and their schemas); returns their keys.
  std::vector<std::string> adopt_volume_folders();
  // A volume's record: its row, or (a folder made on the storage without the API) the bootstrap admin's,
  // recorded now; nullopt when no such volume exists.
  std::optional<VolumeRecord> volume_record(const std::string& key) const;
  // The privileges `who` (a node token: its run's owner) holds on `key` through grants.
  std::set<std::string> volume_granted(const Principal& who, const std::string& key) const;
  // Throws FsError 403 PERMISSION_DENIED naming the missing privilege unless `who` holds `need` on `key`.
  // A volume that does not exist yet is made by a write (the writer, or a node's run owner, owns it).
  void require_volume(const Principal& who, const std::string& key, const std::string& need);
  // Why `who` (a node token: its run's owner) may not create volume `key` (Unity Catalog's rule: USE_CATALOG
  // on its catalog, and USE_SCHEMA and CREATE_VOLUME on its schema, or CREATE_SCHEMA on the catalog for a
  // schema not made yet), or nullopt. `key` "catalog/schema": why `who` may not make that schema (USE_CATALOG and
  // CREATE_SCHEMA on the catalog). docs/volumes.md "Catalogs and schemas".
  std::optional<std::string> volume_create_refusal(const Principal& who, const std::string& key) const;
  // The record of a new volume owned by `owner`, with its catalog and schema (made as `owner`'s if missing).
  VolumeRecord create_volume_record(const std::string& key, const std::string& owner);
  // True when the volume exists and `who` may not see it (access.h volume_visible): answer as if it did not.
  bool volume_hidden(const Principal& who, const std::string& key) const;
  // The volumes `who` may read ("catalog/schema/volume"), for listings.
  std::vector<std::string> readable_volumes(const Principal& who) const;

  // At submit: the run's owner must be able to READ each volume the workload names (throws HttpError 403 or
  // 409); returns those that do not exist yet (they become the owner's once the submit is accepted).
  std::vector<std::string> check_run_volumes(const std::vector<std::string>& keys, const Principal& who) const;
  // The node spec's mounts: the volumes the run's spec names that its owner may read now (a revoked grant
  // takes effect at the next attempt), read-only where the owner may not write.
  void node_volumes(const std::string& owner, const std::vector<std::string>& named_paths, api::NodeSpec& s) const;

 private:
  VolumeStore& volumes_;
  IdentityStore& identity_;
  std::function<int64_t()> now_;
  std::unique_ptr<VolumeAcl> acl_;
};

}  // namespace air::server
