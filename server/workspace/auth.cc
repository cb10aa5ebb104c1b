// Auth (server/workspace/auth.h): tokens made, checked and revoked.
#include "server/workspace/auth.h"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstdlib>

#include "core/base/error.h"
#include "server/store/blobs.h"

namespace air::server {

std::string random_token() {
  unsigned char b[32];
  if (RAND_bytes(b, sizeof b) != 1) throw Error("cannot generate a random token");
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string s = "air_";
  for (unsigned char c : b) s += a[c & 63];
  return s;
}

namespace {

std::string node_scope(const std::string& run_id, int attempt) { return fmt::format("run:{}:{}", run_id, attempt); }

}  // namespace

Auth::Auth(Store& store, IdentityStore& identity, std::function<int64_t()> clock, RunOwner run_owner)
    : store_(store), identity_(identity), now_(std::move(clock)), run_owner_(std::move(run_owner)) {}

void Auth::load() {
  store_.delete_tokens("admin");
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& [hash, scope] : store_.tokens()) {
    if (scope.rfind("run:", 0) != 0) continue;  // node tokens are the only ones kept here now
    Principal p;
    auto colon = scope.rfind(':');
    p.run_id = scope.substr(4, colon - 4);
    p.attempt = std::atoi(scope.c_str() + colon + 1);
    nodes_[hash] = p;
  }
}

std::string Auth::create_admin_token() {
  std::string token = random_token();
  identity_.replace_bootstrap_token(sha256_hex(token), now_());
  return token;
}

Principal Auth::bootstrap_principal() const {
  Principal p;
  p.admin = true;
  p.user = identity_.bootstrap_admin();
  p.groups = identity_.groups_of(p.user);
  return p;
}

std::optional<Principal> Auth::authenticate(const std::string& token, std::string* why) const {
  auto refuse = [why](const char* reason) -> std::optional<Principal> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (token.empty()) return refuse("a bearer token is required (Authorization: Bearer <token>)");
  std::string hash = sha256_hex(token);
  std::optional<Principal> p;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = nodes_.find(hash); it != nodes_.end()) p = it->second;
  }
  if (p) {  // a node token: it acts for its run's owner (asked without Auth's lock: the run table has its own)
    if (run_owner_)
      if (auto owner = run_owner_(p->run_id)) p->owner = *owner;
    p->owner_groups = identity_.groups_of(p->owner);
    p->owner_admin = identity_.is_admin(p->owner);
    return p;
  }
  auto t = identity_.token_by_hash(hash);
  if (!t) return refuse("the token is unknown or was revoked");
  if (t->expiry_ms >= 0 && now_() >= t->expiry_ms) return refuse("the token has expired");
  auto u = identity_.user(t->user_name);
  if (!u || !u->active) return refuse("the token's user is deactivated");
  Principal q;
  q.user = t->user_name;
  q.groups = identity_.groups_of(q.user);
  q.admin = std::find(q.groups.begin(), q.groups.end(), kAdminsGroup) != q.groups.end();
  return q;
}

std::pair<std::string, TokenInfo> Auth::create_token(const std::string& user, int64_t lifetime_s,
                                                     const std::string& comment) {
  std::string token = "dapi" + random_token();  // Databricks' personal tokens start with dapi
  int64_t t = now_();
  TokenInfo info = identity_.add_token(user, sha256_hex(token), comment, t, lifetime_s > 0 ? t + lifetime_s * 1000 : -1);
  return {token, info};
}

std::string Auth::add_node_token(const std::string& run_id, int attempt) {
  std::string token = random_token(), hash = sha256_hex(token);
  store_.add_token(hash, node_scope(run_id, attempt));
  std::lock_guard<std::mutex> g(mu_);
  nodes_[hash] = Principal{false, run_id, attempt};
  return token;
}

void Auth::revoke_node_token(const std::string& run_id, int attempt) {
  store_.delete_tokens(node_scope(run_id, attempt));
  std::lock_guard<std::mutex> g(mu_);
  std::erase_if(nodes_, [&](const auto& kv) { return kv.second.run_id == run_id && kv.second.attempt == attempt; });
}

}  // namespace air::server
