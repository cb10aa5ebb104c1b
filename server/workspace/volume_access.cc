// Who may use which volume: the workspace's side of server/store/volume_acl.h (records, the migration of
// folders from before owners existed, the check at submit, the node spec's mounts). The rule is access.h.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "server/workspace/workspace.h"

namespace air::server {

namespace fs = std::filesystem;

namespace {

// "catalog/schema/volume" of every volume folder on the storage, three levels down.
std::vector<std::string> volume_folders(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  auto dirs = [&](const fs::path& p) {
    std::vector<std::string> names;
    for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) names.push_back(it->path().filename().string());
    ec.clear();
    return names;
  };
  for (const auto& c : dirs(root))
    for (const auto& s : dirs(fs::path(root) / c))
      for (const auto& v : dirs(fs::path(root) / c / s)) {
        std::string key = c + "/" + s + "/" + v;
        try {
          if (parse_volume_path("/Volumes/" + key).volume_key() == key) out.push_back(key);
        } catch (const FsError&) {
        }
      }
  return out;
}

}  // namespace

std::vector<std::string> Workspace::adopt_volume_folders() {
  auto keys = volume_folders(volumes_.root());
  volume_acl_->adopt(keys, identity_->bootstrap_admin(), now());
  return keys;
}

std::optional<VolumeRecord> Workspace::volume_record(const std::string& key) const {
  if (auto r = volume_acl_->find(key)) return r;
  // A folder made on the storage without the API (an admin, a run in the fallback mode): the bootstrap
  // admin's, as the migration made every volume from before owners existed.
  auto meta = volumes_.stat(parse_volume_path("/Volumes/" + key));
  if (meta && meta->is_directory) return volume_acl_->ensure(key, identity_->bootstrap_admin(), now());
  return std::nullopt;
}

std::set<std::string> Workspace::volume_granted(const Principal& who, const std::string& key) const {
  return volume_acl_->granted(key, acl_principals(who));
}

void Workspace::require_volume(const Principal& who, const std::string& key, const std::string& need) {
  auto rec = volume_record(key);
  if (!rec) {
    if (need == kReadVolume) return;  // nothing there to read: the store answers 404
    // The creator owns it; when another caller created it a moment earlier, theirs is the record checked.
    rec = volume_acl_->ensure(key, who.is_node() ? who.owner : who.user, now());
  }
  if (auto why = volume_refusal(who, volume_full_name(key), rec->owner, volume_granted(who, key), need))
    throw FsError(403, "PERMISSION_DENIED", *why);
}

std::vector<std::string> Workspace::readable_volumes(const Principal& who) const {
  std::vector<std::string> out;
  for (const auto& r : volume_acl_->all())
    if (volume_allows(who, r.owner, volume_granted(who, r.key), kReadVolume)) out.push_back(r.key);
  return out;
}

// The run's owner must be able to READ each volume the workload names; the ones that do not exist yet are
// returned (they become the owner's once the submit is accepted).
std::vector<std::string> Workspace::check_run_volumes(const std::vector<std::string>& keys, const Principal& who) const {
  std::vector<std::string> fresh;
  for (const auto& key : keys) {
    auto rec = volume_record(key);
    if (!rec) {
      fresh.push_back(key);
      continue;
    }
    if (auto why = volume_refusal(who, volume_full_name(key), rec->owner, volume_granted(who, key), kReadVolume))
      throw HttpError(403, "PERMISSION_DENIED",
                      fmt::format("the workload names /Volumes/{}, which its owner may not read: {}", key, *why));
  }
  return fresh;
}

// The volumes a node mounts: those the workload names that its owner may read now (a revoked grant takes
// effect at the next attempt), read-only where the owner may not write.
void Workspace::node_volumes(const std::string& owner, const std::string& spec_json, api::NodeSpec& s) const {
  Principal o;
  o.user = owner;
  o.groups = identity_->groups_of(owner);
  o.admin = identity_->is_admin(owner);
  for (const auto& path : named_volume_paths(spec_json)) {
    std::string key = parse_volume_path(path).volume_key();
    if (std::find(s.volumes.begin(), s.volumes.end(), key) != s.volumes.end()) continue;
    auto rec = volume_record(key);
    std::string vowner = rec ? rec->owner : owner;  // not made yet: the agent makes it for the owner
    auto granted = volume_granted(o, key);
    if (!volume_allows(o, vowner, granted, kReadVolume)) continue;
    s.volumes.push_back(key);
    if (!volume_allows(o, vowner, granted, kWriteVolume)) s.read_only_volumes.push_back(key);
  }
}

}  // namespace air::server
