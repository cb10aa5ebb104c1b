// Hostile archives found by the reliability work (issue 15) that the first unpack tests did not cover:
// each is refused with an error naming the entry, and the file an entry aims at is left unchanged.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "core/snapshot/snapshot.h"
#include "tests/core/snapshot/test_util.h"

using namespace air::test;

namespace {

// One 512-byte ustar header block.
std::string ustar_header(const std::string& name, char type, size_t size, const std::string& link = "") {
  std::string h(512, '\0');
  auto put = [&](size_t at, const std::string& v) { h.replace(at, v.size(), v); };
  auto octal = [](size_t v, int width) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*zo", width - 1, v);
    return std::string(buf);
  };
  put(0, name);
  put(100, octal(0644, 8));
  put(108, octal(0, 8));
  put(116, octal(0, 8));
  put(124, octal(size, 12));
  put(136, octal(0, 12));
  h[156] = type;
  put(157, link);
  put(257, std::string("ustar\0" "00", 8));
  put(148, std::string(8, ' '));
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  put(148, octal(sum, 7));
  return h;
}

std::string padded(std::string data) {
  data.resize((data.size() + 511) / 512 * 512, '\0');
  return data;
}

// A pax tar: file "a", then a hard link "b" -> "a" that declares `link_size` bytes and carries them. The
// link has a pax extended header: only then does libarchive honour a link's data (as POSIX allows), and
// libarchive's own writer never writes such an entry, hence the bytes by hand.
void write_link_with_data(const std::string& out, size_t link_size) {
  const std::string record = "21 comment=link data\n";
  std::string tar = ustar_header("a", '0', 8) + padded("original");
  tar += ustar_header("PaxHeader/b", 'x', record.size()) + padded(record);
  tar += ustar_header("b", '1', link_size, "a") + (link_size ? padded(std::string("OVERWRIT", link_size)) : "");
  tar += std::string(1024, '\0');
  std::ofstream(out, std::ios::binary) << tar;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

TEST_CASE("unpack: a hard link that carries data is refused", "[snapshot][unpack]") {
  TempDir dir;
  write_link_with_data(dir / "evil.tar", 8);
  std::string err = error_of([&] { air::unpack_snapshot(dir / "evil.tar", dir / "out/code"); });
  CHECK(err == "unsafe snapshot archive: entry 'b' is a hard link that carries data (8 bytes)");
  CHECK_FALSE(std::filesystem::exists(dir / "out/code"));
}

TEST_CASE("unpack: a hard link without data still links the earlier file", "[snapshot][unpack]") {
  TempDir dir;
  write_link_with_data(dir / "ok.tar", 0);
  air::unpack_snapshot(dir / "ok.tar", dir / "code");
  CHECK(read_all(dir / "code/b") == "original");
  CHECK(std::filesystem::hard_link_count(dir / "code/a") == 2);
}
