// The snapshot: scan (manifest, .airignore, include_paths, symlinks, credentials, errors), the
// deterministic archive, its cache, and the safe unpack against crafted malicious archives.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <algorithm>
#include <functional>
#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/snapshot.h"
#include "tests/core/snapshot_test_util.h"

using namespace air::test;

namespace {

std::vector<std::string> paths_of(const air::SnapshotManifest& m) {
  std::vector<std::string> out;
  for (const auto& f : m.files) out.push_back(f.path);
  return out;
}

uint64_t excluded_by(const air::SnapshotManifest& m, const std::string& source) {
  for (const auto& c : m.excluded)
    if (c.source == source) return c.files_excluded;
  return 0;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const air::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("scan: manifest of files, sizes, largest and rule counts", "[snapshot]") {
  TempDir dir;
  write_file(dir / "train.py", "print('hi')\n");
  write_file(dir / "data/big.bin", std::string(5000, 'x'));
  write_file(dir / "data/mid.bin", std::string(3000, 'x'));
  write_file(dir / "logs/a.log", "1");
  write_file(dir / "logs/b.log", "2");
  write_file(dir / "logs/sub/c.log", "3");
  write_file(dir / ".gitignore", "# logs\nlogs/\n*.tmp\n");
  write_file(dir / "x.tmp", "t");
  write_file(dir / ".git/HEAD", "ref: refs/heads/main\n");
  write_file(dir / ".git/config", "");

  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  CHECK(paths_of(m) == std::vector<std::string>{".gitignore", "data/big.bin", "data/mid.bin", "train.py"});
  CHECK(m.total_bytes == 12 + 5000 + 3000 + 19);
  REQUIRE(m.largest.size() == 4);
  CHECK(m.largest[0].path == "data/big.bin");
  CHECK(m.largest[1].path == "data/mid.bin");
  CHECK(excluded_by(m, ".gitignore:2") == 3);
  CHECK(excluded_by(m, ".gitignore:3") == 1);
  CHECK(excluded_by(m, "built-in") == 2);
  CHECK(m.files_excluded == 6);
  REQUIRE(m.excluded.size() == 3);
  CHECK(m.excluded[0].source == "built-in");
  CHECK(m.excluded[1].pattern == "logs/");
  CHECK(m.root == std::filesystem::canonical(dir.path()).string());
}

TEST_CASE("scan: .airignore overrides .gitignore both ways", "[snapshot]") {
  TempDir dir;
  write_file(dir / ".gitignore", "*.ckpt\n");
  write_file(dir / ".airignore", "!keep.ckpt\nscratch/\n");
  write_file(dir / "sub/.gitignore", "!other.ckpt\n");
  write_file(dir / "sub/.airignore", "other.ckpt\n");
  write_file(dir / "keep.ckpt", "k");
  write_file(dir / "drop.ckpt", "d");
  write_file(dir / "sub/other.ckpt", "o");
  write_file(dir / "scratch/notes.txt", "n");
  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  CHECK(paths_of(m) == std::vector<std::string>{".airignore", ".gitignore", "keep.ckpt", "sub/.airignore",
                                                "sub/.gitignore"});
  CHECK(excluded_by(m, ".gitignore:1") == 1);
  CHECK(excluded_by(m, ".airignore:2") == 1);
  CHECK(excluded_by(m, "sub/.airignore:1") == 1);
}

TEST_CASE("scan: include_paths restrict the walk; ignore rules still apply inside them", "[snapshot]") {
  TempDir dir;
  write_file(dir / ".gitignore", "*.pyc\nsrc/gen/\n");
  write_file(dir / "src/a.py", "a");
  write_file(dir / "src/a.pyc", "c");
  write_file(dir / "src/gen/g.py", "g");
  write_file(dir / "conf/x.yaml", "x");
  write_file(dir / "other/y", "y");
  write_file(dir / "README", "r");
  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {"./src/", "conf/x.yaml", "src"});
  CHECK(m.include_paths == std::vector<std::string>{"conf/x.yaml", "src"});
  CHECK(paths_of(m) == std::vector<std::string>{"conf/x.yaml", "src/a.py"});
  CHECK(excluded_by(m, ".gitignore:1") == 1);
  CHECK(excluded_by(m, ".gitignore:2") == 1);

  // A folder named on purpose goes in even when a rule ignores it; rules below it still apply.
  air::SnapshotManifest g = air::scan_snapshot(dir.path(), {"src/gen"});
  CHECK(paths_of(g) == std::vector<std::string>{"src/gen/g.py"});

  CHECK(error_of([&] { air::scan_snapshot(dir.path(), {"missing"}); }).find("include path 'missing' does not exist") !=
        std::string::npos);
  CHECK(error_of([&] { air::scan_snapshot(dir.path(), {"../etc"}); }).find("stay inside it") != std::string::npos);
  CHECK(error_of([&] { air::scan_snapshot(dir.path(), {"/etc"}); }).find("must be relative") != std::string::npos);
}

TEST_CASE("scan: symlinks inside the root are kept, those leading out are skipped", "[snapshot]") {
  TempDir dir;
  write_file(dir / "real/file.txt", "f");
  std::filesystem::create_symlink("real/file.txt", dir / "rel_link");
  std::filesystem::create_symlink(dir / "real/file.txt", dir / "real/abs_link");
  std::filesystem::create_symlink("../real", dir / "real/dir_link");
  std::filesystem::create_symlink("/etc/passwd", dir / "out_abs");
  std::filesystem::create_symlink("../../etc", dir / "real/out_rel");
  std::filesystem::create_symlink("missing", dir / "dangling");
  // Lexically inside, but it walks through a link that leads out.
  std::filesystem::create_symlink("/", dir / "rootlink");
  std::filesystem::create_symlink("rootlink/etc", dir / "through");

  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  CHECK(paths_of(m) == std::vector<std::string>{"dangling", "real/abs_link", "real/dir_link", "real/file.txt",
                                                "rel_link"});
  for (const auto& f : m.files) {
    if (f.path == "real/abs_link") CHECK(f.link_target == "file.txt");
    if (f.path == "real/dir_link") CHECK(f.link_target == "../real");
    if (f.path == "rel_link") CHECK((f.symlink && f.size == 0));
  }
  std::vector<std::string> skipped;
  for (const auto& s : m.skipped) skipped.push_back(s.path + ": " + s.reason);
  CHECK(skipped == std::vector<std::string>{
                       "out_abs: symlink to a path outside the snapshot root (/etc/passwd)",
                       "real/out_rel: symlink to a path outside the snapshot root (../../etc)",
                       "rootlink: symlink to a path outside the snapshot root (/)",
                       "through: symlink to a path outside the snapshot root (rootlink/etc)",
                   });
}

TEST_CASE("scan: fifos and sockets are skipped with a reason", "[snapshot]") {
  TempDir dir;
  write_file(dir / "a", "a");
  REQUIRE(::mkfifo((dir / "pipe").c_str(), 0644) == 0);
  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  CHECK(paths_of(m) == std::vector<std::string>{"a"});
  REQUIRE(m.skipped.size() == 1);
  CHECK(m.skipped[0].reason == "a fifo: only regular files and symlinks are archived");
}

TEST_CASE("scan: credential-like files are flagged, not excluded", "[snapshot]") {
  TempDir dir;
  for (const char* f : {".env", ".env.production", "keys/id_rsa", "keys/id_ed25519", "tls/server.pem", "tls/server.key",
                        ".netrc", "gcp/credentials.json", "home/.aws/credentials"})
    write_file(dir / f, "secret");
  for (const char* f : {".env.example", "keys/id_rsa.pub", "src/environment.py", "keyboard.py", "pkg/.npmrc"})
    write_file(dir / f, "fine");
  write_file(dir / "web/.npmrc", "//registry.npmjs.org/:_authToken=abc\n");
  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  CHECK(m.credential_like == std::vector<std::string>{".env", ".env.production", ".netrc", "gcp/credentials.json",
                                                       "home/.aws/credentials", "keys/id_ed25519", "keys/id_rsa",
                                                       "tls/server.key", "tls/server.pem", "web/.npmrc"});
  CHECK(m.files.size() == 15);
}

TEST_CASE("scan: a bad root is a usage error", "[snapshot]") {
  TempDir dir;
  write_file(dir / "file", "x");
  CHECK(error_of([&] { air::scan_snapshot(dir / "nope", {}); }) == "snapshot root does not exist: " + (dir / "nope"));
  CHECK(error_of([&] { air::scan_snapshot(dir / "file", {}); }) ==
        "snapshot root must be a directory: " + (dir / "file"));
}

TEST_CASE("scan: an unreadable file is an error naming it", "[snapshot]") {
  // root reads everything, so the scan runs in a child that drops to 'nobody'.
  TempDir dir;
  write_file(dir / "ok.txt", "ok");
  write_file(dir / "sub/secret.txt", "no");
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  ::chmod((dir / "sub/secret.txt").c_str(), 0600);
  bool as_root = ::geteuid() == 0;
  if (!as_root) ::chmod((dir / "sub/secret.txt").c_str(), 0);
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    if (as_root && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    std::string msg = error_of([&] { air::scan_snapshot(dir.path(), {}); });
    (void)!::write(fds[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK(msg == "cannot read 'sub/secret.txt': Permission denied");
}
