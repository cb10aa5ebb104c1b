// The rules of server/workspace/access.h.
#include "server/workspace/access.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/store/secrets.h"
#include "server/store/volume_acl.h"

namespace air::server {

std::string Principal::name() const {
  return is_node() ? fmt::format("node:{}:{}", run_id, attempt) : user;
}

const char* run_level_name(RunLevel l) {
  switch (l) {
    case RunLevel::kCanView: return "CAN_VIEW";
    case RunLevel::kCanManageRun: return "CAN_MANAGE_RUN";
    case RunLevel::kCanManage: return "CAN_MANAGE";
    case RunLevel::kIsOwner: return "IS_OWNER";
    default: return "NONE";
  }
}

std::optional<RunLevel> run_level_from(const std::string& s) {
  for (RunLevel l : {RunLevel::kCanView, RunLevel::kCanManageRun, RunLevel::kCanManage, RunLevel::kIsOwner})
    if (s == run_level_name(l)) return l;
  return std::nullopt;
}

RunLevel run_level(const Principal& who, const std::string& owner, const std::vector<api::RunPermission>& grants) {
  if (who.is_node() || who.user.empty()) return RunLevel::kNone;  // node tokens use their own routes only
  if (who.admin || who.user == owner) return RunLevel::kIsOwner;
  RunLevel best = RunLevel::kNone;
  for (const auto& g : grants) {
    bool mine = (!g.user_name.empty() && g.user_name == who.user) ||
                (!g.service_principal_name.empty() && g.service_principal_name == who.user) ||
                (!g.group_name.empty() && std::find(who.groups.begin(), who.groups.end(), g.group_name) != who.groups.end());
    if (!mine) continue;
    if (auto l = run_level_from(g.permission_level); l && *l != RunLevel::kIsOwner) best = std::max(best, *l);
  }
  return best;
}

std::optional<std::string> run_refusal(const Principal& who, const std::string& run_id, const std::string& owner,
                                       const std::vector<api::RunPermission>& grants, RunLevel need) {
  if (who.is_node())
    return fmt::format("a node token may use only its own attempt's node endpoints, not run {} as a user", run_id);
  RunLevel have = run_level(who, owner, grants);
  if (have >= need) return std::nullopt;
  return fmt::format("user '{}' lacks {} on run {} (owner: {}); the owner can grant it under permissions: in the "
                     "workload{}",
                     who.user, run_level_name(need), run_id, owner,
                     have == RunLevel::kNone ? "" : fmt::format(" (you have {})", run_level_name(have)));
}

std::optional<std::string> secret_refusal(const std::string& who, const std::string& scope, const std::string& have,
                                          const std::string& need) {
  if (secret_permission_rank(have) >= secret_permission_rank(need)) return std::nullopt;
  return fmt::format("user '{}' lacks {} permission on secret scope '{}'{}; a user with MANAGE on it can grant it: "
                     "air secrets put-acl {} {} {}",
                     who, need, scope, have.empty() ? "" : fmt::format(" (has {})", have), scope, who, need);
}

bool volume_allows(const Principal& who, const std::string& owner, const std::set<std::string>& granted,
                   const std::string& privilege) {
  const std::string& user = who.is_node() ? who.owner : who.user;
  if (user.empty()) return false;
  if ((who.is_node() ? who.owner_admin : who.admin) || user == owner) return true;
  return granted.count(privilege) > 0;
}

std::optional<std::string> volume_refusal(const Principal& who, const std::string& full_name, const std::string& owner,
                                          const std::set<std::string>& granted, const std::string& need) {
  if (volume_allows(who, owner, granted, need)) return std::nullopt;
  const std::string& user = who.is_node() ? who.owner : who.user;
  std::string have;
  for (const auto& g : granted) have += (have.empty() ? "" : ", ") + g;
  return fmt::format("{}'{}' lacks {} on volume {} (owner: {}){}; the owner can grant it: air volumes grant {} {} {}",
                     who.is_node() ? fmt::format("run {}'s owner ", who.run_id) : "user ", user, need, full_name, owner,
                     have.empty() ? "" : fmt::format(" (has {})", have), full_name, user, need);
}

bool volume_visible(const Principal& who, const std::string& owner, const std::set<std::string>& granted) {
  return volume_allows(who, owner, granted, kReadVolume) || !granted.empty();
}

bool container_allows(const Principal& who, const std::vector<std::string>& owners,
                      const std::set<std::string>& granted, const std::string& privilege) {
  const std::string& user = who.is_node() ? who.owner : who.user;
  if (user.empty()) return false;
  if ((who.is_node() ? who.owner_admin : who.admin)) return true;
  if (std::find(owners.begin(), owners.end(), user) != owners.end()) return true;
  return granted.count(privilege) > 0;
}

std::vector<std::string> acl_principals(const Principal& who) {
  std::vector<std::string> out;
  const std::string& user = who.is_node() ? who.owner : who.user;
  if (!user.empty()) out.push_back(user);
  for (const auto& g : who.is_node() ? who.owner_groups : who.groups) out.push_back(g);
  return out;
}

}  // namespace air::server
