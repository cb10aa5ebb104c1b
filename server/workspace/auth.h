// Auth: who a bearer token is, and the tokens the workspace makes. Users' tokens (and the bootstrap admin's)
// live in the identity store; node tokens (one per attempt, given to its agents) are kept in memory under
// Auth's own lock, and in workspace.db as "run:<id>:<attempt>" so that agents re-attach after a restart.
// A node token acts for its run's owner: the run table answers who that is (run_owner).
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "server/store/identity.h"
#include "server/store/store.h"
#include "server/workspace/access.h"

namespace air::server {

class Auth {
 public:
  // The run's owner, or nullopt for an unknown run. Called without Auth's lock held.
  using RunOwner = std::function<std::optional<std::string>(const std::string& run_id)>;

  Auth(Store& store, IdentityStore& identity, std::function<int64_t()> clock, RunOwner run_owner);

  // At start: the node tokens of attempts still running, from the store (bootstrap admin tokens of
  // workspaces from before it was a listed user's token are deleted: create_admin_token makes this start's).
  void load();

  std::string create_admin_token();  // returns the clear token; only its hash is kept
  // Who the token is; nullopt for none, an unknown, revoked or expired token, or a deactivated user
  // (`why` then says which, without the token).
  std::optional<Principal> authenticate(const std::string& token, std::string* why = nullptr) const;
  // A personal access token for `user`: the clear token (shown once) and its record. lifetime_s <= 0: none.
  std::pair<std::string, TokenInfo> create_token(const std::string& user, int64_t lifetime_s, const std::string& comment);
  // The bootstrap admin, as its token authenticates.
  Principal bootstrap_principal() const;
  IdentityStore& identity() { return identity_; }
  int64_t now_ms() const { return now_(); }  // the workspace's clock (tests shorten it)

  // An attempt's node token (the clear token, for its agents), and revoking it when the attempt ends.
  std::string add_node_token(const std::string& run_id, int attempt);
  void revoke_node_token(const std::string& run_id, int attempt);

 private:
  Store& store_;
  IdentityStore& identity_;
  std::function<int64_t()> now_;
  RunOwner run_owner_;
  mutable std::mutex mu_;
  std::map<std::string, Principal> nodes_;  // sha256 hex -> the attempt it belongs to
};

// A random token (URL-safe, 32 bytes of entropy).
std::string random_token();

}  // namespace air::server
