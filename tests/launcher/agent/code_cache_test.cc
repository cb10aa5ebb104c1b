// The node's code cache (launcher/agent/code_cache.h): real archives, real folders, real hard links.
#include "launcher/agent/code_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/base/error.h"
#include "core/snapshot/snapshot.h"
#include "tests/launcher/test_files.h"

using air::launcher::place_cached_code;
using air::launcher_test::read_file;
using air::launcher_test::TempDir;
namespace fs = std::filesystem;

namespace {

struct Snapshot {
  std::string archive, digest;
};

// A tree with a file, a file in a folder, an executable and a symlink, archived as air archives it.
Snapshot make_snapshot(const fs::path& where, const std::string& marker) {
  fs::path src = where / ("src-" + marker);
  fs::create_directories(src / "pkg");
  std::ofstream(src / "train.py") << "print('" << marker << "')\n";
  std::ofstream(src / "pkg" / "util.py") << "X = 1\n";
  std::ofstream(src / "run.sh") << "#!/bin/sh\n";
  fs::permissions(src / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
  fs::create_symlink("pkg/util.py", src / "util_link.py");
  auto m = air::scan_snapshot(src.string(), {});
  auto a = air::write_snapshot_archive(m, (where / ("snap-" + marker + ".tar.zst")).string());
  return {a.path, a.sha256};
}

ino_t inode(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("the code cache unpacks a digest once and links its files into each node's own folders", "[code_cache]") {
  TempDir dir;
  Snapshot s = make_snapshot(dir.path, "one");
  const std::string cache = (dir.path / "cache").string();
  int asked = 0;
  auto archive = [&] {
    ++asked;
    return s.archive;
  };
  auto first = place_cached_code(cache, s.digest, archive, (dir.path / "node0").string(), {});
  auto second = place_cached_code(cache, s.digest, archive, (dir.path / "node1").string(), {});
  CHECK(asked == 1);
  CHECK(first.unpacked);
  CHECK_FALSE(second.unpacked);
  CHECK(first.links == 3);  // train.py, pkg/util.py, run.sh; the symlink is made anew
  CHECK(second.links == 3);
  const fs::path entry = fs::path(cache) / s.digest;
  for (const char* node : {"node0", "node1"}) {
    fs::path code = dir.path / node;
    CHECK(read_file(code / "train.py") == "print('one')\n");
    CHECK(read_file(code / "pkg" / "util.py") == "X = 1\n");
    CHECK(inode(code / "train.py") == inode(entry / "train.py"));       // a link, not a copy
    CHECK(inode(code / "pkg" / "util.py") == inode(entry / "pkg" / "util.py"));
    CHECK(inode(code / "pkg") != inode(entry / "pkg"));                 // the node's own folder
    CHECK(fs::is_symlink(code / "util_link.py"));
    CHECK(inode(code / "util_link.py") != inode(entry / "util_link.py"));
    CHECK(fs::read_symlink(code / "util_link.py") == "pkg/util.py");
    CHECK((fs::status(code / "run.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  }
  // What one node does to its folders stays there.
  std::ofstream(dir.path / "node0" / "pkg" / "new.py") << "made by node 0\n";
  fs::remove(dir.path / "node0" / "train.py");
  CHECK_FALSE(fs::exists(dir.path / "node1" / "pkg" / "new.py"));
  CHECK_FALSE(fs::exists(entry / "pkg" / "new.py"));
  CHECK(read_file(dir.path / "node1" / "train.py") == "print('one')\n");
  CHECK(read_file(entry / "train.py") == "print('one')\n");
}

TEST_CASE("nodes that start together unpack the digest once", "[code_cache]") {
  TempDir dir;
  Snapshot s = make_snapshot(dir.path, "together");
  const std::string cache = (dir.path / "cache").string();
  std::atomic<int> asked{0};
  auto archive = [&] {
    ++asked;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a slow download: the others wait on the lock
    return s.archive;
  };
  std::vector<std::thread> nodes;
  for (int i = 0; i < 4; ++i)
    nodes.emplace_back([&, i] { place_cached_code(cache, s.digest, archive, (dir.path / ("n" + std::to_string(i))).string(), {}); });
  for (auto& t : nodes) t.join();
  CHECK(asked == 1);
  for (int i = 0; i < 4; ++i) CHECK(read_file(dir.path / ("n" + std::to_string(i)) / "train.py") == "print('together')\n");
}

TEST_CASE("the code cache keeps the most recently used digests and clears dead unpacks", "[code_cache]") {
  TempDir dir;
  const std::string cache = (dir.path / "cache").string();
  Snapshot a = make_snapshot(dir.path, "a"), b = make_snapshot(dir.path, "b"), c = make_snapshot(dir.path, "c");
  auto from = [](const Snapshot& s) { return [&s] { return s.archive; }; };
  place_cached_code(cache, a.digest, from(a), (dir.path / "a1").string(), {}, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  place_cached_code(cache, b.digest, from(b), (dir.path / "b1").string(), {}, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  place_cached_code(cache, a.digest, from(a), (dir.path / "a2").string(), {}, 2);  // a is now the most recent
  fs::create_directories(fs::path(cache) / ("." + c.digest + ".unpack-AbCdEf"));  // an agent died unpacking
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  place_cached_code(cache, c.digest, from(c), (dir.path / "c1").string(), {}, 2);
  CHECK(fs::exists(fs::path(cache) / a.digest));
  CHECK_FALSE(fs::exists(fs::path(cache) / b.digest));
  CHECK(fs::exists(fs::path(cache) / c.digest));
  CHECK_FALSE(fs::exists(fs::path(cache) / ("." + c.digest + ".unpack-AbCdEf")));
  // The evicted digest's nodes keep their code: their links hold the files.
  CHECK(read_file(dir.path / "b1" / "train.py") == "print('b')\n");
}

TEST_CASE("an archive the unpacker refuses leaves no cache entry", "[code_cache]") {
  TempDir dir;
  const std::string cache = (dir.path / "cache").string();
  std::string digest(64, 'b');
  fs::path bogus = dir.path / "bogus.tar.zst";
  std::ofstream(bogus) << "not an archive at all";
  CHECK_THROWS_AS(place_cached_code(cache, digest, [&] { return bogus.string(); }, (dir.path / "code").string(), {}),
                  air::Error);
  CHECK_FALSE(fs::exists(fs::path(cache) / digest));
  CHECK_THROWS_AS(place_cached_code(cache, "../../etc", [&] { return bogus.string(); }, (dir.path / "x").string(), {}),
                  air::Error);
}

TEST_CASE("another account cannot change a linked file in place, only its own folder's entries", "[code_cache]") {
  if (::geteuid() != 0) return;  // needs a second account: root only (the agent's case: a root agent, --run-as)
  TempDir dir;
  Snapshot s = make_snapshot(dir.path, "shared");
  const std::string cache = (dir.path / "cache").string();
  fs::path code = dir.path / "node0";
  place_cached_code(cache, s.digest, [&] { return s.archive; }, code.string(), {});
  fs::permissions(dir.path, fs::perms::owner_all | fs::perms::others_exec);  // the account may pass through
  REQUIRE(::chown(code.c_str(), 65534, 65534) == 0);  // the node's folder is the account's, as the agent hands it
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
    std::string file = (code / "train.py").string();
    if (::open(file.c_str(), O_WRONLY) >= 0 || errno != EACCES) ::_exit(11);  // no write through the link
    if (::chmod(file.c_str(), 0666) == 0) ::_exit(12);                          // nor a mode change
    if (::unlink(file.c_str()) != 0) ::_exit(13);                                // its own folder's entry: yes
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);            // and a file of its own there
    if (fd < 0 || ::write(fd, "mine\n", 5) != 5) ::_exit(14);
    ::_exit(0);
  }
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK(read_file(fs::path(cache) / s.digest / "train.py") == "print('shared')\n");
  CHECK(read_file(code / "train.py") == "mine\n");
}
