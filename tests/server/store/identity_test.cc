// IdentityStore on a real SQLite file: users, groups, tokens and the audit log survive a reopen; the
// bootstrap admin keeps its first name; deactivating a user drops its tokens; names are checked.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>

#include "server/store/identity.h"

using namespace air::server;
namespace fs = std::filesystem;

namespace {
struct TempDb {
  std::string dir, path;
  TempDb() {
    char t[] = "/tmp/air-identity-test-XXXXXX";
    dir = ::mkdtemp(t);
    path = dir + "/workspace.db";
  }
  ~TempDb() { fs::remove_all(dir); }
};
}  // namespace

TEST_CASE("identity store: users, groups, tokens and audit entries survive a reopen") {
  TempDb db;
  std::string token_id;
  {
    IdentityStore s(db.path, "ops");
    CHECK(s.bootstrap_admin() == "ops");
    CHECK(s.is_admin("ops"));
    s.add_user("alice", "", 1);
    s.add_group("ml");
    s.add_member("ml", "alice");
    token_id = s.add_token("alice", "hash-a", "laptop", 10, 1000).token_id;
    s.audit({0, 5, "alice", "POST", "/api/air/v1/runs", "", 201});
  }
  IdentityStore s(db.path, "someone-else");  // the first name stays
  CHECK(s.bootstrap_admin() == "ops");
  CHECK(s.groups_of("alice") == std::vector<std::string>{"users", "ml"});
  CHECK_FALSE(s.is_admin("alice"));
  auto t = s.token_by_hash("hash-a");
  REQUIRE(t);
  CHECK(t->user_name == "alice");
  CHECK(t->expiry_ms == 1000);
  CHECK(t->token_id == token_id);
  auto log = s.audit_log({"alice", 0, 10});
  REQUIRE(log.size() == 1);
  CHECK(log[0].route == "/api/air/v1/runs");
  CHECK(s.audit_log({"bob", 0, 10}).empty());
  CHECK(s.audit_log({"", 6, 10}).empty());  // since
}

TEST_CASE("identity store: deactivation drops tokens, names, duplicates and the bootstrap admin are guarded") {
  TempDb db;
  IdentityStore s(db.path, "admin");
  s.add_user("bob", "Bob", 1);
  s.add_token("bob", "hash-b", "", 1, -1);
  s.set_active("bob", false);
  CHECK_FALSE(s.token_by_hash("hash-b"));
  CHECK(s.groups_of("bob").empty());
  CHECK_THROWS_WITH(s.add_token("bob", "hash-c", "", 1, -1), "user 'bob' is deactivated");
  CHECK_THROWS_WITH(s.add_user("bob", "", 1), "a user or group named 'bob' already exists");
  CHECK_THROWS_WITH(s.add_group("users"), "a user or group named 'users' already exists");
  CHECK_THROWS_WITH(s.add_user("bad name", "", 1),
                    "user name 'bad name' is invalid: use 1-128 letters, digits, '.', '_', '-', '@' or '+'");
  CHECK_THROWS_WITH(s.set_active("admin", false), "the bootstrap admin cannot be deactivated");
  CHECK_THROWS_WITH(s.remove_member("admins", "admin"), "the bootstrap admin stays in the admins group");
  CHECK_THROWS_WITH(s.add_member("nope", "bob"), "group 'nope' does not exist");
  CHECK_FALSE(s.delete_token("no-such-id"));
}
