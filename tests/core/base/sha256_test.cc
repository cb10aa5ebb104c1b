// SHA-256 (core/base/sha256.h): FIPS 180-2's examples, pieces fed in any split, and files against the
// system's sha256sum.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "core/base/sha256.h"

TEST_CASE("sha256: the standard's examples, in one piece and split anywhere", "[sha256]") {
  CHECK(air::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(air::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  CHECK(air::sha256_hex(two) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  for (size_t cut = 0; cut <= two.size(); ++cut) {
    air::Sha256 h;
    h.update(two.substr(0, cut));
    h.update(two.substr(cut));
    CHECK(h.hex_digest() == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  }
  air::Sha256 million;
  const std::string a(1000, 'a');
  for (int i = 0; i < 1000; ++i) million.update(a);
  CHECK(million.hex_digest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: a file over the read size matches sha256sum", "[sha256]") {
  char path[] = "/tmp/air-sha256-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::mt19937 g(7);
  std::string data((1 << 20) * 3 + 17, '\0');
  for (auto& c : data) c = static_cast<char>(g());
  std::ofstream(path, std::ios::binary) << data;
  std::string want;
  if (FILE* p = ::popen(("sha256sum " + std::string(path)).c_str(), "r")) {
    char buf[128] = {};
    if (std::fgets(buf, sizeof buf, p)) want = std::string(buf).substr(0, 64);
    ::pclose(p);
  }
  if (want.size() != 64) WARN("no sha256sum: compared with the in-memory digest only");
  CHECK(air::sha256_file(path) == air::sha256_hex(data));
  if (want.size() == 64) CHECK(air::sha256_file(path) == want);
  std::remove(path);
  CHECK_THROWS_WITH(air::sha256_file(path), Catch::Contains("cannot read"));
}
