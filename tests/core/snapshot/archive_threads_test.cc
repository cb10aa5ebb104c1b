// The snapshot writer's pipeline (core/snapshot/archive.cc): the same bytes on any number of compressor
// threads, several zstd frames read back as one stream, and its hand-written tar headers read by two
// independent readers (libarchive through unpack_snapshot, GNU tar).
#include <sys/stat.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "core/base/sha256.h"
#include "core/snapshot/snapshot.h"
#include "tests/core/snapshot/test_util.h"

using namespace air::test;

namespace {

// ~7 MB over several 2 MiB frames: text that compresses, random bytes that do not, small files, a long
// path (pax record), a path that fits ustar's prefix/name split, a long and a non-ASCII symlink target.
std::string deep_path() {
  std::string deep;
  for (int i = 0; i < 6; ++i) deep += std::string(45, static_cast<char>('a' + i)) + "/";
  return deep + "leaf.txt";  // 284 bytes: a pax path record, and a pax linkpath for a link to it
}

void make_tree(const TempDir& dir) {
  std::mt19937_64 rng(7);
  std::string text;
  const char* words[] = {"import", "torch", "def", "train", "(self,", "batch)", "return", "loss", "\n    ", "=", "x"};
  while (text.size() < 4'500'000) text += std::string(words[rng() % 11]) + " ";
  write_file(dir / "src/model.py", text);
  std::string noise(2'000'000, '\0');
  for (auto& c : noise) c = static_cast<char>(rng());
  write_file(dir / "weights.bin", noise);
  for (int i = 0; i < 50; ++i) write_file(dir / ("pkg/m" + std::to_string(i) + ".py"), text.substr(i * 1000, 700 + i));
  write_file(dir / deep_path(), "deep");
  std::string split = std::string(90, 'p') + "/" + std::string(60, 'q') + "/" + std::string(80, 'r') + ".txt";
  write_file(dir / split, "split");  // 235 bytes: fits ustar's 155-byte prefix and 100-byte name
  write_file(dir / "empty.txt", "");
  std::filesystem::create_symlink(deep_path(), dir / "long_link");
  write_file(dir / std::string("données/été.txt"), "accent");
  std::string long_accent;
  for (int i = 0; i < 60; ++i) long_accent += "é";
  write_file(dir / ("données/" + long_accent + ".txt"), "long accent");  // a 124-byte name: pax, hdrcharset
  std::filesystem::create_symlink(std::string("données/été.txt"), dir / "accent_link");
  ::chmod((dir / "src/model.py").c_str(), 0755);
}

// Decompresses a whole zstd stream (any number of frames) with libzstd.
std::string zstd_decompress(const std::string& in) {
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> d(ZSTD_createDStream(), ZSTD_freeDStream);
  std::string out;
  std::string buf(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  while (ib.pos < ib.size) {
    ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
    size_t r = ZSTD_decompressStream(d.get(), &ob, &ib);
    REQUIRE_FALSE(ZSTD_isError(r));
    out.append(buf.data(), ob.pos);
  }
  return out;
}

size_t frames_in(const std::string& archive) {
  size_t n = 0, pos = 0;
  while (pos < archive.size()) {
    size_t size = ZSTD_findFrameCompressedSize(archive.data() + pos, archive.size() - pos);
    REQUIRE_FALSE(ZSTD_isError(size));
    pos += size;
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("archive: 1, 2 and 8 compressor threads write the same bytes", "[snapshot][archive]") {
  TempDir dir, out;
  make_tree(dir);
  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  air::SnapshotArchive one = air::write_snapshot_archive(m, out / "t1.tar.zst", {}, 1);
  air::SnapshotArchive two = air::write_snapshot_archive(m, out / "t2.tar.zst", {}, 2);
  air::SnapshotArchive eight = air::write_snapshot_archive(m, out / "t8.tar.zst", {}, 8);
  air::SnapshotArchive dflt = air::write_snapshot_archive(m, out / "td.tar.zst");
  CHECK(one.sha256 == air::sha256_file(out / "t1.tar.zst"));
  CHECK(two.sha256 == one.sha256);
  CHECK(eight.sha256 == one.sha256);
  CHECK(dflt.sha256 == one.sha256);
  std::string bytes = read_file(out / "t1.tar.zst");
  CHECK(read_file(out / "t2.tar.zst") == bytes);
  CHECK(read_file(out / "t8.tar.zst") == bytes);
  // The tar stream is ~7 MB: several frames, one after the other, make one zstd stream.
  CHECK(frames_in(bytes) >= 3);
  CHECK(bytes.size() < 4'500'000);  // the text compressed
}

TEST_CASE("archive: several frames unpack as one stream, by libarchive and by GNU tar", "[snapshot][unpack]") {
  TempDir dir, out;
  make_tree(dir);
  air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
  air::SnapshotArchive a = air::write_snapshot_archive(m, out / "s.tar.zst", {}, 3);
  air::unpack_snapshot(a.path, out / "code");
  for (const auto& f : m.files) {
    INFO(f.path);
    if (f.symlink) {
      CHECK(std::filesystem::read_symlink(out / ("code/" + f.path)).string() == f.link_target);
    } else {
      CHECK(read_file(out / ("code/" + f.path)) == read_file(dir / f.path));
    }
  }
  struct stat st;
  REQUIRE(::stat((out / "code/src/model.py").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);

  // GNU tar checks every header's checksum and reads the pax records on its own.
  write_file(out / "s.tar", zstd_decompress(read_file(a.path)));
  std::string listed = run_shell("tar -tf '" + out / "s.tar" + "'");
  std::string expected;
  for (const auto& f : m.files) expected += f.path + "\n";
  CHECK(listed == expected);
  std::string verbose = run_shell("tar --numeric-owner -tvf '" + out / "s.tar" + "' src/model.py long_link");
  CHECK(verbose.find("-rwxr-xr-x 0/0") != std::string::npos);
  CHECK(verbose.find("1970-01-01") != std::string::npos);
  CHECK(verbose.find("long_link -> " + deep_path()) != std::string::npos);
}
