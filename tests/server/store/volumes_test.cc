// The volume store on a real folder: escapes (symlinks out), atomic writes, paging, usage. (The path rules:
// tests/core/volumes/path_test.cc.)
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/store/volumes.h"

namespace fs = std::filesystem;
using namespace air;
using namespace air::server;

namespace {

struct TempRoot {
  std::string dir;
  TempRoot() {
    char t[] = "/tmp/air-volumes-test-XXXXXX";
    dir = ::mkdtemp(t);
  }
  ~TempRoot() { fs::remove_all(dir); }
};

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("volumes: writes are atomic, refuse to replace without overwrite, and list in pages") {
  TempRoot t;
  VolumeStore s(t.dir);
  auto f = parse_volume_path("/Volumes/main/default/ckpt/a/b.txt");
  {
    auto w = s.begin_write(f, false);
    w->write("hello", 5);
    CHECK_FALSE(fs::exists(t.dir + "/main/default/ckpt/a/b.txt"));  // not under its name until commit
    w->commit();
  }
  CHECK(slurp(t.dir + "/main/default/ckpt/a/b.txt") == "hello");
  CHECK_THROWS_WITH(s.begin_write(f, false),
                    "/Volumes/main/default/ckpt/a/b.txt already exists (upload with overwrite=true)");
  {
    auto w = s.begin_write(f, true);
    w->write("half", 4);
    // destroyed without commit: the old content stays and no temporary file is left behind
  }
  CHECK(slurp(t.dir + "/main/default/ckpt/a/b.txt") == "hello");
  CHECK(std::distance(fs::directory_iterator(t.dir + "/main/default/ckpt/a"), fs::directory_iterator()) == 1);

  auto dir = parse_volume_path("/Volumes/main/default/ckpt/many");
  s.make_directories(dir);
  for (int i = 0; i < 5; ++i) s.begin_write(dir.child("f" + std::to_string(i)), false)->commit();
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    auto page = s.list(dir, 2, token);
    for (const auto& e : page.entries) names.push_back(e.name);
    token = page.next_page_token;
    ++pages;
  } while (!token.empty());
  CHECK(pages == 3);
  CHECK(names == std::vector<std::string>{"f0", "f1", "f2", "f3", "f4"});
  auto u = s.usage(parse_volume_path("/Volumes/main/default/ckpt"));
  CHECK(u.files == 6);
  CHECK(u.bytes == 5);
  CHECK_THROWS_WITH(s.remove_directory(dir),
                    "/Volumes/main/default/ckpt/many is not empty; delete its contents first (air fs rm -r)");
}

TEST_CASE("volumes: a symbolic link never leads outside the root") {
  TempRoot t, outside;
  std::ofstream(outside.dir + "/secret") << "s3cret";
  VolumeStore s(t.dir);
  s.make_directories(parse_volume_path("/Volumes/main/default/v"));
  fs::create_directory_symlink(outside.dir, t.dir + "/main/default/v/out");
  fs::create_symlink(outside.dir + "/secret", t.dir + "/main/default/v/link");
  CHECK_THROWS_WITH(s.open_read(parse_volume_path("/Volumes/main/default/v/out/secret")),
                    "/Volumes/main/default/v/out is a symbolic link; volume paths never follow links");
  CHECK_THROWS_WITH(s.open_read(parse_volume_path("/Volumes/main/default/v/link")),
                    "/Volumes/main/default/v/link is a symbolic link; volume paths never follow links");
  CHECK_THROWS_AS(s.begin_write(parse_volume_path("/Volumes/main/default/v/out/new"), true), FsError);
  CHECK_FALSE(fs::exists(outside.dir + "/new"));
  CHECK(s.list(parse_volume_path("/Volumes/main/default/v"), 100, "").entries.empty());  // links are not listed
}
