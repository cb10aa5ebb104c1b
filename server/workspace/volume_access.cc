// VolumeAccess (server/workspace/volume_access.h): records, the migration of folders from before owners
// existed, the check at submit, the node spec's mounts. The rule is access.h.
#include "server/workspace/volume_access.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "server/workspace/errors.h"

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

VolumeAccess::VolumeAccess(const std::string& db_path, VolumeStore& volumes, IdentityStore& identity,
                           std::function<int64_t()> clock)
    : volumes_(volumes), identity_(identity), now_(std::move(clock)), acl_(std::make_unique<VolumeAcl>(db_path)) {}

std::vector<std::string> VolumeAccess::adopt_volume_folders() {
  auto keys = volume_folders(volumes_.root());
  acl_->adopt(keys, identity_.bootstrap_admin(), now_());
  acl_->seed(identity_.bootstrap_admin(), now_());  // main, main.default, the schemas of those volumes
  return keys;
}

namespace {

const std::string& acting_user(const Principal& who) { return who.is_node() ? who.owner : who.user; }

std::string as_whom(const Principal& who) {
  return who.is_node() ? fmt::format("run {}'s owner '{}'", who.run_id, who.owner) : fmt::format("user '{}'", who.user);
}

}  // namespace

std::optional<std::string> VolumeAccess::volume_create_refusal(const Principal& who, const std::string& key) const {
  // "c/s": a schema to make (its first steps only); "c/s/v": a volume.
  bool schema_only = std::count(key.begin(), key.end(), '/') == 1;
  std::string c = key.substr(0, key.find('/')), cs = schema_only ? key : key.substr(0, key.rfind('/'));
  std::string schema_name = volume_full_name(cs), user = acting_user(who);
  std::string what = fmt::format("{} {}", schema_only ? "schema" : "volume", volume_full_name(key));
  auto principals = acl_principals(who);
  auto catalog = acl_->find_container(c);
  std::set<std::string> cgranted = acl_->granted(c, principals);
  // A catalog the caller may not use reads the same whether or not it exists.
  if (!catalog || !container_allows(who, {catalog->owner}, cgranted, kUseCatalog))
    return fmt::format("{} may not create {}: catalog '{}' does not exist or {} lacks USE_CATALOG on it; a "
                       "workspace admin can create it (air fs mkdir dbfs:/Volumes/{}) or grant it: air volumes grant "
                       "{} {} USE_CATALOG",
                       as_whom(who), what, c, user, schema_only ? key + "/<volume>" : key, c, user);
  auto schema = acl_->find_container(cs);
  if (!schema || schema_only) {
    if (container_allows(who, {catalog->owner}, cgranted, kCreateSchema)) return std::nullopt;  // made as the caller's
    return fmt::format("{} may not create {}: {}{} lacks CREATE_SCHEMA on catalog '{}' (owner: {}); its owner can "
                       "grant it: air volumes grant {} {} CREATE_SCHEMA",
                       as_whom(who), what, schema_only ? "" : fmt::format("schema {} does not exist and ", schema_name),
                       user, c, catalog->owner, c, user);
  }
  std::set<std::string> granted = acl_->granted(cs, principals);
  granted.insert(cgranted.begin(), cgranted.end());  // a catalog's grants hold in each of its schemas
  std::vector<std::string> owners{catalog->owner, schema->owner};
  if (!container_allows(who, owners, granted, kUseSchema))
    return fmt::format("{} may not create {}: schema {} does not exist or {} lacks USE_SCHEMA on it; its "
                       "owner can grant it: air volumes grant {} {} USE_SCHEMA",
                       as_whom(who), what, schema_name, user, schema_name, user);
  if (!container_allows(who, owners, granted, kCreateVolume))
    return fmt::format("{} lacks CREATE_VOLUME on schema {} (owner: {}), so may not create volume {} there; its owner "
                       "can grant it: air volumes grant {} {} CREATE_VOLUME",
                       as_whom(who), schema_name, schema->owner, volume_full_name(key), schema_name, user);
  return std::nullopt;
}

VolumeRecord VolumeAccess::create_volume_record(const std::string& key, const std::string& owner) {
  int64_t t = now_();
  acl_->ensure_container(key.substr(0, key.find('/')), owner, t);
  acl_->ensure_container(key.substr(0, key.rfind('/')), owner, t);
  return acl_->ensure(key, owner, t);
}

bool VolumeAccess::volume_hidden(const Principal& who, const std::string& key) const {
  auto rec = acl_->find(key);
  return rec && !volume_visible(who, rec->owner, volume_granted(who, key));
}

std::optional<VolumeRecord> VolumeAccess::volume_record(const std::string& key) const {
  if (auto r = acl_->find(key)) return r;
  // A folder made on the storage without the API (an admin, a run in the fallback mode): the bootstrap
  // admin's, as the migration made every volume from before owners existed.
  auto meta = volumes_.stat(parse_volume_path("/Volumes/" + key));
  if (meta && meta->is_directory) return acl_->ensure(key, identity_.bootstrap_admin(), now_());
  return std::nullopt;
}

std::set<std::string> VolumeAccess::volume_granted(const Principal& who, const std::string& key) const {
  return acl_->granted(key, acl_principals(who));
}

void VolumeAccess::require_volume(const Principal& who, const std::string& key, const std::string& need) {
  auto rec = volume_record(key);
  // A volume `who` may not see is answered as one that does not exist: a read finds nothing, a write is
  // refused as creating it would be, or (where `who` may create volumes) as a name already taken, whose
  // owner is not named.
  if (rec && !volume_visible(who, rec->owner, volume_granted(who, key))) {
    if (need == kReadVolume) throw FsError(404, "NOT_FOUND", fmt::format("/Volumes/{} does not exist", key));
    if (auto why = volume_create_refusal(who, key)) throw FsError(403, "PERMISSION_DENIED", *why);
    throw FsError(409, "ALREADY_EXISTS", fmt::format("volume {} already exists and is not {}'s: choose another name",
                                                     volume_full_name(key), acting_user(who)));
  }
  if (!rec) {
    if (need == kReadVolume) return;  // nothing there to read: the store answers 404
    if (auto why = volume_create_refusal(who, key)) throw FsError(403, "PERMISSION_DENIED", *why);
    // The creator owns it; when another caller created it a moment earlier, theirs is the record checked.
    rec = create_volume_record(key, acting_user(who));
  }
  if (auto why = volume_refusal(who, volume_full_name(key), rec->owner, volume_granted(who, key), need))
    throw FsError(403, "PERMISSION_DENIED", *why);
}

std::vector<std::string> VolumeAccess::readable_volumes(const Principal& who) const {
  std::vector<std::string> out;
  for (const auto& r : acl_->all())
    if (volume_allows(who, r.owner, volume_granted(who, r.key), kReadVolume)) out.push_back(r.key);
  return out;
}

std::vector<std::string> VolumeAccess::check_run_volumes(const std::vector<std::string>& keys, const Principal& who) const {
  std::vector<std::string> fresh;
  for (const auto& key : keys) {
    auto rec = volume_record(key);
    auto granted = volume_granted(who, key);
    if (!rec || !volume_visible(who, rec->owner, granted)) {  // one it may not see reads as one not made yet
      if (auto why = volume_create_refusal(who, key))
        throw HttpError(403, "PERMISSION_DENIED",
                        fmt::format("the workload names /Volumes/{}, which does not exist and its owner may not "
                                    "create: {}", key, *why));
      if (rec)
        throw HttpError(409, "ALREADY_EXISTS",
                        fmt::format("the workload names /Volumes/{}: volume {} already exists and is not {}'s; choose "
                                    "another name", key, volume_full_name(key), who.user));
      fresh.push_back(key);
      continue;
    }
    if (auto why = volume_refusal(who, volume_full_name(key), rec->owner, granted, kReadVolume))
      throw HttpError(403, "PERMISSION_DENIED",
                      fmt::format("the workload names /Volumes/{}, which its owner may not read: {}", key, *why));
  }
  return fresh;
}

void VolumeAccess::node_volumes(const std::string& owner, const std::vector<std::string>& named_paths,
                                api::NodeSpec& s) const {
  Principal o;
  o.user = owner;
  o.groups = identity_.groups_of(owner);
  o.admin = identity_.is_admin(owner);
  for (const auto& path : named_paths) {
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
