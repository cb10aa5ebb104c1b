// What the workspace says about run isolation, and whom it refuses where nothing separates users' runs.
#include "server/workspace/isolation.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace air::server;

namespace {

Isolation no_sandbox() {
  Isolation iso;
  iso.backend = "local";
  iso.probed = true;
  iso.sandbox = false;
  iso.why_not = "bwrap (Debian package bubblewrap) is not installed";
  return iso;
}

}  // namespace

TEST_CASE("without a sandbox, a second user's run is refused with the reason and the way out") {
  Isolation iso = no_sandbox();
  CHECK_FALSE(isolation_refusal(iso, "root", "root", 3));  // the workspace's own admin
  CHECK_FALSE(isolation_refusal(iso, "alice", "root", 1));  // a workspace of one user
  auto why = isolation_refusal(iso, "alice", "root", 3);
  REQUIRE(why);
  CHECK(*why ==
        "this workspace cannot seal runs off from each other on the local backend (bwrap (Debian package "
        "bubblewrap) is not installed), and it has 3 users: a run of 'alice' could read the workspace's state "
        "and the other users' secrets, code and processes, so only 'root' may start runs here. Install "
        "bubblewrap (Debian package bubblewrap) with unprivileged user namespaces allowed, or, if every user "
        "trusts every other, restart the workspace with 'air server --single-trust-domain'");
  iso.single_trust_domain = true;
  CHECK_FALSE(isolation_refusal(iso, "alice", "root", 3));
}

TEST_CASE("with a sandbox, or on a backend whose nodes decide, nothing is refused at submit") {
  Isolation iso = no_sandbox();
  iso.sandbox = true;
  iso.why_not.clear();
  CHECK_FALSE(isolation_refusal(iso, "alice", "root", 3));
  Isolation slurm;
  slurm.backend = "slurm";
  CHECK_FALSE(isolation_refusal(slurm, "alice", "root", 3));
  CHECK(needs_separation(slurm, "alice", "root", 3));  // its nodes refuse without a sandbox
  CHECK_FALSE(needs_separation(slurm, "root", "root", 3));
  slurm.single_trust_domain = true;
  CHECK_FALSE(needs_separation(slurm, "alice", "root", 3));
}

TEST_CASE("isolation is said at start and read back by status") {
  Isolation iso = no_sandbox();
  iso.per_owner_accounts = true;
  CHECK(describe_isolation(iso) ==
        "isolation: NONE on the local backend (bwrap (Debian package bubblewrap) is not installed): a run's "
        "commands can read this workspace's state and other runs' processes; they run as this workspace's unix "
        "account\n"
        "isolation: only the workspace admin's runs start while it has other users; install bubblewrap, or "
        "restart with --single-trust-domain if all users trust each other\n");
  auto dir = std::filesystem::temp_directory_path() / "air-isolation-test";
  std::filesystem::create_directories(dir);
  write_isolation(dir.string(), iso);
  auto back = read_isolation(dir.string());
  REQUIRE(back);
  CHECK(describe_isolation(*back) == describe_isolation(iso));
  std::filesystem::remove_all(dir);
  CHECK_FALSE(read_isolation(dir.string()));
}
