// $AIR_HOME inside a snapshot root is left out of the manifest (and so of the archive and the dry-run plan).
#include <catch2/catch.hpp>

#include "core/snapshot/snapshot.h"
#include "tests/core/snapshot/test_util.h"

using air::test::TempDir;
using air::test::write_file;

TEST_CASE("snapshot: a state folder inside the root is excluded and counted as a built-in rule") {
  TempDir t;
  write_file(t / "train.py", "print(1)\n");
  write_file(t / ".air/workspace.db", std::string(1000, 'x'));
  write_file(t / ".air/blobs/ab/cd", "blob");
  write_file(t / ".airx/kept.txt", "a sibling whose name starts the same stays\n");
  air::SnapshotManifest m = air::scan_snapshot(t.path(), {});
  const uint64_t before = m.total_bytes;
  REQUIRE(m.files.size() == 4);
  CHECK(air::exclude_subtree(m, t / ".air", "$AIR_HOME") == 2);
  REQUIRE(m.files.size() == 2);
  CHECK(m.files[0].path == ".airx/kept.txt");
  CHECK(m.files[1].path == "train.py");
  CHECK(m.total_bytes == before - 1004);
  for (const auto& f : m.largest) CHECK(f.path.rfind(".air/", 0) != 0);
  REQUIRE(!m.excluded.empty());
  CHECK(m.excluded.front().source == "built-in");
  CHECK(m.excluded.front().pattern == "$AIR_HOME (.air/)");
  CHECK(m.excluded.front().files_excluded == 2);
}

TEST_CASE("snapshot: a state folder outside the root, or the root itself, changes nothing") {
  TempDir t, other;
  write_file(t / "train.py", "print(1)\n");
  air::SnapshotManifest m = air::scan_snapshot(t.path(), {});
  CHECK(air::exclude_subtree(m, other.path(), "$AIR_HOME") == 0);
  CHECK(air::exclude_subtree(m, t.path(), "$AIR_HOME") == 0);
  CHECK(air::exclude_subtree(m, t / "missing", "$AIR_HOME") == 0);
  CHECK(m.files.size() == 1);
  CHECK(m.excluded.empty());
}
