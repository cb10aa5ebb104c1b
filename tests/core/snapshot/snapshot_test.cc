// The snapshot: scan (manifest, .airignore, include_paths, symlinks, credentials, errors), the
// deterministic archive, its cache, and the safe unpack against crafted malicious archives.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <functional>
#include <catch2/catch.hpp>

#include "core/base/error.h"
#include "core/base/sha256.h"
#include "core/snapshot/snapshot.h"
#include "tests/core/snapshot/test_util.h"

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

TEST_CASE("scan: a big tree (its files stat'ed on several threads) gives every file's metadata, in order", "[snapshot]") {
  // 6,000 kept files: more than one thread's share (core/snapshot/scan.cc add_found), whatever the core count.
  TempDir dir;
  std::vector<std::string> expected;
  for (int i = 0; i < 6000; ++i) {
    std::string rel = "pkg" + std::to_string(i % 37) + "/m" + std::to_string(i % 5) + "/f" + std::to_string(i) + ".py";
    write_file(dir / rel, std::string(static_cast<size_t>(i % 97), 'a'));
    expected.push_back(rel);
  }
  for (int i = 0; i < 300; ++i) write_file(dir / ("pkg" + std::to_string(i % 37) + "/skip" + std::to_string(i) + ".tmp"), "x");
  write_file(dir / ".gitignore", "*.tmp\n");
  expected.push_back(".gitignore");
  write_file(dir / "pkg3/run.sh", "#!/bin/sh\n");
  ::chmod((dir / "pkg3/run.sh").c_str(), 0755);
  expected.push_back("pkg3/run.sh");
  write_file(dir / "pkg7/.npmrc", "//registry.npmjs.org/:_authToken=abc\n");
  expected.push_back("pkg7/.npmrc");
  std::filesystem::create_symlink("../pkg1/m1/f1.py", dir / "pkg2/inside_link");
  expected.push_back("pkg2/inside_link");
  std::filesystem::create_symlink("/etc/passwd", dir / "pkg4/outside_link");
  REQUIRE(::mkfifo((dir / "pkg5/queue").c_str(), 0644) == 0);
  std::sort(expected.begin(), expected.end());

  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  REQUIRE(paths_of(m) == expected);
  uint64_t total = 0;
  std::vector<std::string> wrong;  // files whose metadata is not their own lstat's
  for (const auto& f : m.files) {
    struct stat st;
    REQUIRE(::lstat((dir / f.path).c_str(), &st) == 0);
    bool ok = f.symlink == S_ISLNK(st.st_mode) && f.size == (f.symlink ? 0 : static_cast<uint64_t>(st.st_size)) &&
              f.inode == st.st_ino &&
              f.mtime_ns == static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec &&
              f.executable == (f.path == "pkg3/run.sh");
    if (!ok) wrong.push_back(f.path);
    total += f.size;
  }
  CHECK(wrong.empty());
  CHECK(m.total_bytes == total);
  CHECK(m.files[std::find(expected.begin(), expected.end(), "pkg2/inside_link") - expected.begin()].link_target ==
        "../pkg1/m1/f1.py");
  CHECK(excluded_by(m, ".gitignore:1") == 300);
  CHECK(m.credential_like == std::vector<std::string>{"pkg7/.npmrc"});
  REQUIRE(m.skipped.size() == 2);
  CHECK(m.skipped[0].path == "pkg4/outside_link");
  CHECK(m.skipped[1].path == "pkg5/queue");
  // The same tree scanned again gives the same fingerprint (the threads' split does not show).
  CHECK(air::snapshot_fingerprint(air::scan_snapshot(dir.path(), {})) == air::snapshot_fingerprint(m));
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

TEST_CASE("scan: include_paths restrict the walk and ignore rules still apply inside them", "[snapshot]") {
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

// ---- archive --------------------------------------------------------------------------------------

namespace {

struct ListedEntry {
  std::string path;
  unsigned type = 0;
  unsigned perm = 0;
  int64_t size = 0;
  int64_t mtime = -1;
  int64_t uid = -1, gid = -1;
  std::string uname, gname, link;
};

std::vector<ListedEntry> list_archive(const std::string& path) {
  struct archive* a = archive_read_new();
  archive_read_support_format_all(a);
  archive_read_support_filter_all(a);
  REQUIRE(archive_read_open_filename(a, path.c_str(), 65536) == ARCHIVE_OK);
  std::vector<ListedEntry> out;
  struct archive_entry* e;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    ListedEntry l;
    l.path = archive_entry_pathname(e);
    l.type = archive_entry_filetype(e);
    l.perm = archive_entry_perm(e);
    l.size = archive_entry_size(e);
    l.mtime = archive_entry_mtime(e);
    l.uid = archive_entry_uid(e);
    l.gid = archive_entry_gid(e);
    l.uname = archive_entry_uname(e) ? archive_entry_uname(e) : "";
    l.gname = archive_entry_gname(e) ? archive_entry_gname(e) : "";
    l.link = archive_entry_symlink(e) ? archive_entry_symlink(e) : "";
    out.push_back(l);
  }
  archive_read_free(a);
  return out;
}

void make_project(const TempDir& dir) {
  write_file(dir / "train.py", "import torch\n");
  write_file(dir / "run.sh", "#!/bin/sh\necho hi\n");
  ::chmod((dir / "run.sh").c_str(), 0700);
  write_file(dir / "data/b.txt", std::string(100000, 'b'));
  write_file(dir / "data/a.txt", "a");
  write_file(dir / std::string("données/é.txt"), "accent");
  write_file(dir / (std::string(120, 'n') + "/" + std::string(120, 'm')), "a long path");
  std::filesystem::create_symlink("../train.py", dir / "data/link.py");
  write_file(dir / ".gitignore", "*.log\n");
  write_file(dir / "x.log", "log");
}

void set_old_mtimes(const std::string& root) {
  struct timespec times[2] = {{1'600'000'000, 0}, {1'600'000'000, 0}};
  for (const auto& e : std::filesystem::recursive_directory_iterator(root))
    ::utimensat(AT_FDCWD, e.path().c_str(), times, AT_SYMLINK_NOFOLLOW);
}

}  // namespace

TEST_CASE("archive: deterministic bytes and normalized metadata", "[snapshot][archive]") {
  TempDir dir, out;
  make_project(dir);
  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  air::SnapshotArchive a1 = air::write_snapshot_archive(m, out / "one.tar.zst");
  CHECK(a1.sha256 == air::sha256_file(out / "one.tar.zst"));
  CHECK(a1.bytes == std::filesystem::file_size(out / "one.tar.zst"));
  CHECK(read_file(out / "one.tar.zst").substr(0, 4) == "\x28\xB5\x2F\xFD");  // zstd frame magic

  // Times, owners and non-executable mode bits do not reach the archive.
  set_old_mtimes(dir.path());
  ::chmod((dir / "train.py").c_str(), 0600);
  ::chmod((dir / "run.sh").c_str(), 0755);
  air::SnapshotArchive a2 = air::write_snapshot_archive(air::scan_snapshot(dir.path(), {}), out / "two.tar.zst");
  CHECK(a2.sha256 == a1.sha256);
  CHECK(read_file(out / "one.tar.zst") == read_file(out / "two.tar.zst"));

  // A one-byte change or an executable bit does.
  ::chmod((dir / "train.py").c_str(), 0700);
  air::SnapshotArchive a3 = air::write_snapshot_archive(air::scan_snapshot(dir.path(), {}), out / "three.tar.zst");
  CHECK(a3.sha256 != a1.sha256);

  auto entries = list_archive(out / "one.tar.zst");
  std::vector<std::string> paths;
  for (const auto& e : entries) {
    paths.push_back(e.path);
    CHECK(e.mtime == 0);
    CHECK(e.uid == 0);
    CHECK(e.gid == 0);
    CHECK(e.uname.empty());
    CHECK(e.gname.empty());
  }
  CHECK(paths == std::vector<std::string>{".gitignore", "data/a.txt", "data/b.txt", "data/link.py",
                                          std::string("données/é.txt"),
                                          std::string(120, 'n') + "/" + std::string(120, 'm'), "run.sh",
                                          "train.py"});
  CHECK(entries[3].type == AE_IFLNK);
  CHECK(entries[3].link == "../train.py");
  CHECK(entries[6].perm == 0755);
  CHECK(entries[7].perm == 0644);
  CHECK(entries[2].size == 100000);
}

TEST_CASE("archive: a file that changes after the scan fails cleanly", "[snapshot][archive]") {
  TempDir dir, out;
  write_file(dir / "a.txt", "short");
  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  write_file(dir / "a.txt", "much longer now");
  CHECK(error_of([&] { air::write_snapshot_archive(m, out / "x.tar.zst"); }) ==
        "'a.txt' changed while the snapshot was being written");
  CHECK(std::filesystem::is_empty(out.path()));
}

TEST_CASE("archive: round trip through unpack keeps contents, modes and links", "[snapshot][unpack]") {
  TempDir dir, out;
  make_project(dir);
  air::SnapshotArchive a = air::write_snapshot_archive(air::scan_snapshot(dir.path(), {}), out / "s.tar.zst");
  air::unpack_snapshot(a.path, out / "code");
  CHECK(read_file(out / "code/train.py") == "import torch\n");
  CHECK(read_file(out / "code/data/b.txt") == std::string(100000, 'b'));
  CHECK(read_file(out / std::string("code/données/é.txt")) == "accent");
  CHECK(std::filesystem::read_symlink(out / "code/data/link.py") == "../train.py");
  CHECK(read_file(out / "code/data/link.py") == "import torch\n");
  struct stat st;
  REQUIRE(::stat((out / "code/run.sh").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);
  REQUIRE(::stat((out / "code/train.py").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);
  CHECK_FALSE(std::filesystem::exists(out / "code/x.log"));
  // Only the archive and the tree: no temporary folder left next to it.
  CHECK(std::distance(std::filesystem::directory_iterator(out.path()), {}) == 2);
}

TEST_CASE("cache: an unchanged tree reuses the archive and any change rebuilds it", "[snapshot][cache]") {
  TempDir dir, cache;
  make_project(dir);
  set_old_mtimes(dir.path());
  bool reused = true;
  air::SnapshotArchive a1 = air::snapshot_with_cache(air::scan_snapshot(dir.path(), {}), cache.path(), &reused);
  CHECK_FALSE(reused);
  CHECK(a1.path == cache / (a1.sha256 + ".tar.zst"));
  CHECK(air::sha256_file(a1.path) == a1.sha256);

  air::SnapshotArchive a2 = air::snapshot_with_cache(air::scan_snapshot(dir.path(), {}), cache.path(), &reused);
  CHECK(reused);
  CHECK(a2.sha256 == a1.sha256);
  CHECK(a2.bytes == a1.bytes);

  // Same size, different content, older mtime than before: the ctime and the inode still tell.
  write_file(dir / "data/a.txt", "A");
  set_old_mtimes(dir.path());
  air::SnapshotArchive a3 = air::snapshot_with_cache(air::scan_snapshot(dir.path(), {}), cache.path(), &reused);
  CHECK_FALSE(reused);
  CHECK(a3.sha256 != a1.sha256);

  // A cached archive that disappeared is rebuilt, not trusted.
  std::filesystem::remove(a3.path);
  air::SnapshotArchive a4 = air::snapshot_with_cache(air::scan_snapshot(dir.path(), {}), cache.path(), &reused);
  CHECK_FALSE(reused);
  CHECK(a4.sha256 == a3.sha256);
  CHECK(std::filesystem::exists(a4.path));
}

TEST_CASE("cache: a tree modified just now is archived but not remembered", "[snapshot][cache]") {
  TempDir dir, cache;
  write_file(dir / "fresh.txt", "written a moment ago");
  bool reused = true;
  air::snapshot_with_cache(air::scan_snapshot(dir.path(), {}), cache.path(), &reused);
  CHECK_FALSE(reused);
  air::snapshot_with_cache(air::scan_snapshot(dir.path(), {}), cache.path(), &reused);
  CHECK_FALSE(reused);
}

TEST_CASE("archive: progress is reported and can abort cleanly", "[snapshot][archive]") {
  TempDir dir, out;
  write_file(dir / "big.bin", std::string(20 << 20, 'z'));
  write_file(dir / "small.txt", "s");
  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  std::vector<uint64_t> seen;
  air::write_snapshot_archive(m, out / "a.tar.zst", [&](uint64_t done, uint64_t total) {
    CHECK(total == m.total_bytes);
    seen.push_back(done);
  });
  REQUIRE(seen.size() >= 2);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(seen.back() == m.total_bytes);

  CHECK(error_of([&] {
          air::write_snapshot_archive(m, out / "b.tar.zst", [](uint64_t, uint64_t) { throw air::Error("interrupted"); });
        }) == "interrupted");
  CHECK_FALSE(std::filesystem::exists(out / "b.tar.zst"));
  CHECK(std::distance(std::filesystem::directory_iterator(out.path()), {}) == 1);
}
