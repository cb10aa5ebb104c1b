// Safe unpacking: crafted malicious archives (written with libarchive, as an attacker would) must each be
// refused with an error naming the entry, leaving nothing behind.
#include <archive.h>
#include <archive_entry.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "core/base/error.h"
#include "core/snapshot/snapshot.h"
#include "tests/core/snapshot/test_util.h"

using namespace air::test;

namespace {

struct Crafted {
  std::string path;
  unsigned type = AE_IFREG;
  std::string content;
  std::string symlink;
  std::string hardlink;
  int64_t declared_size = -1;  // -1: the content's size
};

// Writes a tar (optionally zstd) with exactly the given entries, as an attacker would.
void craft(const std::string& out, const std::vector<Crafted>& entries, bool zstd = false) {
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (zstd) archive_write_add_filter_zstd(a);
  REQUIRE(archive_write_open_filename(a, out.c_str()) == ARCHIVE_OK);
  for (const auto& c : entries) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_copy_pathname(e, c.path.c_str());
    archive_entry_set_filetype(e, c.type);
    archive_entry_set_perm(e, 0644);
    if (!c.symlink.empty()) archive_entry_copy_symlink(e, c.symlink.c_str());
    if (!c.hardlink.empty()) archive_entry_copy_hardlink(e, c.hardlink.c_str());
    int64_t size = c.declared_size >= 0 ? c.declared_size : static_cast<int64_t>(c.content.size());
    archive_entry_set_size(e, c.type == AE_IFREG && c.hardlink.empty() ? size : 0);
    REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
    if (!c.content.empty()) archive_write_data(a, c.content.data(), c.content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

// Unpacks a crafted archive and returns the error; checks that nothing is left behind.
std::string refused(const std::vector<Crafted>& entries, const air::UnpackLimits& limits = {}) {
  TempDir dir;
  craft(dir / "evil.tar", entries);
  std::string err = error_of([&] { air::unpack_snapshot(dir / "evil.tar", dir / "out/code", limits); });
  CHECK_FALSE(std::filesystem::exists(dir / "out/code"));
  if (std::filesystem::exists(dir / "out")) CHECK(std::filesystem::is_empty(dir / "out"));
  CHECK_FALSE(std::filesystem::exists("/tmp/air-escaped"));
  return err;
}

const std::string kPrefix = "unsafe snapshot archive: entry ";

Crafted file(std::string path, std::string content = {}) {
  Crafted c;
  c.path = std::move(path);
  c.content = std::move(content);
  return c;
}
Crafted node(std::string path, unsigned type) {
  Crafted c;
  c.path = std::move(path);
  c.type = type;
  return c;
}
Crafted sym(std::string path, std::string target) {
  Crafted c = node(std::move(path), AE_IFLNK);
  c.symlink = std::move(target);
  return c;
}
Crafted hard(std::string path, std::string target) {
  Crafted c = file(std::move(path));
  c.hardlink = std::move(target);
  return c;
}

}  // namespace

TEST_CASE("unpack: absolute paths and '..' are refused", "[snapshot][unpack]") {
  CHECK(refused({file("ok.txt", "fine"), file("/tmp/air-escaped", "x")}) ==
        kPrefix + "'/tmp/air-escaped' has an absolute path");
  CHECK(refused({file("../air-escaped", "x")}) == kPrefix + "'../air-escaped' has a '..' component");
  CHECK(refused({file("a/../../air-escaped", "x")}) == kPrefix + "'a/../../air-escaped' has a '..' component");
}

TEST_CASE("unpack: links that lead outside are refused", "[snapshot][unpack]") {
  Crafted abs = sym("l", "/etc");
  CHECK(refused({abs}) == kPrefix + "'l' is a symlink to an absolute path (/etc)");
  Crafted up = sym("a/l", "../../etc");
  CHECK(refused({up}) == kPrefix + "'a/l' is a symlink that points outside the destination (../../etc)");
  Crafted dip = sym("l", "x/../../y");
  CHECK(refused({dip}) == kPrefix + "'l' is a symlink that points outside the destination (x/../../y)");
  // Each link is inside on its own; together they lead out.
  Crafted l1 = sym("d/l1", "..");
  Crafted l2 = sym("l2", "d/l1/../x");
  CHECK(refused({l1, l2}) == kPrefix + "'l2' is a symlink that leads outside the destination through other links");
  Crafted hard_abs = hard("h", "/etc/passwd");
  CHECK(refused({hard_abs}) == kPrefix + "'h' is a hard link to an absolute path (/etc/passwd)");
  Crafted hard_up = hard("h", "../x");
  CHECK(refused({hard_up}) == kPrefix + "'h' is a hard link with a '..' component (../x)");
  Crafted hard_missing = hard("h", "nothing");
  CHECK(refused({hard_missing}) == kPrefix + "'h' is a hard link to 'nothing', which is not a file unpacked before it");
}

TEST_CASE("unpack: writing through a symlink or twice to one path is refused", "[snapshot][unpack]") {
  Crafted link = sym("sub", ".");
  Crafted through = file("sub/f", "x");
  CHECK(refused({link, through}) == kPrefix + "'sub/f' would be written through a symlink or a file");
  Crafted to_tmp = sym("t", "inside");
  Crafted over = file("t", "x");
  CHECK(refused({to_tmp, over}) == kPrefix + "'t' appears twice in the archive");
  CHECK(refused({file("f", "1"), file("f", "2")}) == kPrefix + "'f' appears twice in the archive");
}

TEST_CASE("unpack: devices, fifos and sockets are refused", "[snapshot][unpack]") {
  CHECK(refused({node("dev", AE_IFCHR)}) == kPrefix + "'dev' is a character device: only files, folders and symlinks are allowed");
  CHECK(refused({node("blk", AE_IFBLK)}) == kPrefix + "'blk' is a block device: only files, folders and symlinks are allowed");
  CHECK(refused({node("p", AE_IFIFO)}) == kPrefix + "'p' is a fifo: only files, folders and symlinks are allowed");
}

TEST_CASE("unpack: size and entry-count bombs are refused", "[snapshot][unpack]") {
  air::UnpackLimits small;
  small.max_total_bytes = 10000;
  small.max_entries = 3;
  CHECK(refused({file("a", std::string(6000, 'a')), file("b", std::string(6000, 'b'))}, small) ==
        kPrefix + "'b' makes the archive expand beyond 10000 bytes");
  air::UnpackLimits few;
  few.max_entries = 3;
  CHECK(refused({file("a"), file("b"), file("c"), file("d")}, few) == kPrefix + "'d' exceeds the limit of 3 entries");

  // A highly compressible bomb: 64 MiB of zeros in a small zstd archive, against a 1 MiB limit.
  TempDir dir;
  craft(dir / "bomb.tar.zst", {file("zeros", std::string(64 << 20, '\0'))}, true);
  CHECK(std::filesystem::file_size(dir / "bomb.tar.zst") < 100000);
  air::UnpackLimits mib;
  mib.max_total_bytes = 1 << 20;
  CHECK(error_of([&] { air::unpack_snapshot(dir / "bomb.tar.zst", dir / "code", mib); }) ==
        kPrefix + "'zeros' makes the archive expand beyond 1048576 bytes");
  CHECK_FALSE(std::filesystem::exists(dir / "code"));
}

// Issue 22, finding 7: limits counted in disk blocks, bounded by the archive's size and by the free disk.
TEST_CASE("unpack: tiny files count as the blocks they take, the free disk bounds it", "[snapshot][unpack]") {
  air::UnpackLimits lim;
  lim.max_total_bytes = 40000;  // 9 one-byte files + the folder: 10 blocks = 40960 bytes of disk
  std::vector<Crafted> tiny = {node("d", AE_IFDIR)};
  for (int i = 0; i < 9; ++i) tiny.push_back(file("d/f" + std::to_string(i), "x"));
  CHECK(refused(tiny, lim) == kPrefix + "'d/f8' makes the archive expand beyond 40000 bytes");

  // A disk that must keep more free than it has refuses everything, and says so.
  air::UnpackLimits full;
  full.keep_free_bytes = UINT64_MAX / 2;
  CHECK(refused({file("a", "x")}, full).rfind("not enough disk space to unpack the snapshot: entry 'a'", 0) == 0);
}

TEST_CASE("unpack: an archive may not expand past 200 times its own size", "[snapshot][unpack]") {
  // 32 MiB of zeros from an archive of a few KiB: past 200 times its size (with a 1 MiB floor).
  TempDir dir;
  std::vector<Crafted> zeros;
  zeros.push_back(file("zeros", std::string(32 << 20, '\0')));
  craft(dir / "z.tar.zst", zeros, true);
  air::UnpackLimits ratio;
  ratio.ratio_floor_bytes = 1 << 20;
  uint64_t budget = std::max<uint64_t>(1 << 20, std::filesystem::file_size(dir / "z.tar.zst") * 200);
  CHECK(error_of([&] { air::unpack_snapshot(dir / "z.tar.zst", dir / "code", ratio); }) ==
        kPrefix + "'zeros' makes the archive expand beyond " + std::to_string(budget) + " bytes");
  CHECK_FALSE(std::filesystem::exists(dir / "code"));
}

// Issue 22, finding 6: a symlink whose path is exactly 4096 bytes was unpacked unchecked (the kernel's
// lookup failed with ENAMETOOLONG and was ignored).
TEST_CASE("unpack: a link the kernel cannot resolve is refused", "[snapshot][unpack]") {
  std::string dirs;
  while (dirs.size() < 4000) dirs += std::string(200, 'd') + "/";
  std::string name = dirs + std::string(4096 - dirs.size(), 'l');
  REQUIRE(name.size() == 4096);
  std::string err = refused({sym(name, "x")});
  CHECK(err.find("has a path longer than the kernel resolves (4095 bytes)") != std::string::npos);
  // A link loop is resolved by nobody: refused too.
  CHECK(refused({sym("a", "b"), sym("b", "a")}) ==
        kPrefix + "'a' is a symlink the kernel cannot resolve (Too many levels of symbolic links)");
}

TEST_CASE("unpack: hard links to earlier files, folders and './' entries are fine", "[snapshot][unpack]") {
  TempDir dir;
  craft(dir / "ok.tar", {node("./", AE_IFDIR), node("d", AE_IFDIR), file("d/f", "data"), hard("h", "d/f"),
                         sym("d/l", "f")});
  air::unpack_snapshot(dir / "ok.tar", dir / "code");
  CHECK(read_file(dir / "code/h") == "data");
  CHECK(read_file(dir / "code/d/l") == "data");
}

TEST_CASE("unpack: the destination must be new or empty and corrupt archives fail cleanly", "[snapshot][unpack]") {
  TempDir dir;
  craft(dir / "ok.tar", {file("f", "data")});
  write_file(dir / "busy/old", "old");
  CHECK(error_of([&] { air::unpack_snapshot(dir / "ok.tar", dir / "busy"); }) ==
        "cannot unpack into '" + (dir / "busy") + "': it exists and is not an empty folder");
  std::filesystem::create_directories(dir / "empty");
  air::unpack_snapshot(dir / "ok.tar", dir / "empty");
  CHECK(read_file(dir / "empty/f") == "data");

  std::string bytes = read_file(dir / "ok.tar");
  write_file(dir / "cut.tar", bytes.substr(0, 700));
  std::string err = error_of([&] { air::unpack_snapshot(dir / "cut.tar", dir / "cut"); });
  CHECK(err.rfind("corrupt snapshot archive", 0) == 0);
  CHECK_FALSE(std::filesystem::exists(dir / "cut"));
  write_file(dir / "garbage", "this is not an archive at all");
  CHECK(error_of([&] { air::unpack_snapshot(dir / "garbage", dir / "g"); }).rfind("cannot read snapshot archive", 0) == 0);
}

