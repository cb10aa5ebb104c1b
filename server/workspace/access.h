// Who is calling and what they may do: the one place the workspace's rules live (docs/security.md is the
// table; tests/server/security/routes_test.cc checks every route against it). Pure functions: the
// router asks, the workspace and the stores answer the facts.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/wire/api.h"

namespace air::server {

// Who a bearer token belongs to: a user (the bootstrap admin token is the bootstrap admin's), or the
// agents of one attempt of one run (a node token).
struct Principal {
  bool admin = false;       // a member of the `admins` group
  std::string run_id;       // node tokens: their run and attempt
  int attempt = 0;
  std::string user;         // user tokens: the user's name
  std::vector<std::string> groups;  // user tokens: the user's groups (`users` included)
  std::string owner;        // node tokens: the run's owner (whose rights its secrets are read with)
  std::vector<std::string> owner_groups;
  bool owner_admin = false;  // node tokens: the run's owner is a workspace admin (reads every scope)

  bool is_node() const { return !run_id.empty(); }
  // For the audit log and messages: the user's name or node:<run>:<attempt>.
  std::string name() const;
};

// A run's permission levels, lowest first; kIsOwner is the submitter's (and an admin's).
enum class RunLevel { kNone = 0, kCanView, kCanManageRun, kCanManage, kIsOwner };
const char* run_level_name(RunLevel l);            // "CAN_VIEW", ...
std::optional<RunLevel> run_level_from(const std::string& s);

// What a caller may do to a run: its owner and admins everything; a grant in `permissions:` (to the user,
// one of its groups, or a service principal of that name) at least the needed level.
RunLevel run_level(const Principal& who, const std::string& owner, const std::vector<api::RunPermission>& grants);

// The refusal message when `who` lacks `need` on the run, or nullopt when allowed. Names the missing level.
std::optional<std::string> run_refusal(const Principal& who, const std::string& run_id, const std::string& owner,
                                       const std::vector<api::RunPermission>& grants, RunLevel need);

// Secret scopes: READ < WRITE < MANAGE (SecretStore::permission gives the caller's level). Returns the
// refusal message naming scope and the missing permission, or nullopt.
std::optional<std::string> secret_refusal(const std::string& who, const std::string& scope, const std::string& have,
                                          const std::string& need);

// Volumes (Unity Catalog's privileges): the owner and admins hold every privilege; others the READ_VOLUME /
// WRITE_VOLUME granted to them or one of their groups (`granted`, from VolumeAcl::granted). A node token
// acts with its run's owner's rights. Returns whether `who` holds `privilege`.
bool volume_allows(const Principal& who, const std::string& owner, const std::set<std::string>& granted,
                   const std::string& privilege);

// The refusal naming the volume (catalog.schema.volume), the missing privilege and how to get it, or nullopt.
std::optional<std::string> volume_refusal(const Principal& who, const std::string& full_name, const std::string& owner,
                                          const std::set<std::string>& granted, const std::string& need);

// Whether `who` may see a volume at all: its owner, admins and anyone holding a privilege on it. To anyone
// else the volume is answered as if it did not exist (404), and its owner is never named.
bool volume_visible(const Principal& who, const std::string& owner, const std::set<std::string>& granted);

// Catalogs and schemas (Unity Catalog's securables above a volume): admins and the owners in `owners` (the
// catalog's, and for a schema its own) hold every privilege; others what `granted` holds (the grants on the
// schema and on its catalog, to the user or a group).
bool container_allows(const Principal& who, const std::vector<std::string>& owners,
                      const std::set<std::string>& granted, const std::string& privilege);

// The principals a user's rights come from on an ACL: the user itself and each of its groups.
std::vector<std::string> acl_principals(const Principal& who);

}  // namespace air::server
