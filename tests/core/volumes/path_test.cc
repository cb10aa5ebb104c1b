// Volume path rules (core/volumes/path.h): names, escapes, and the /Volumes paths a workload names.
#include <catch2/catch.hpp>

#include <string>

#include "core/volumes/path.h"

using namespace air;

namespace {

std::string refusal(const std::string& path) {
  try {
    parse_volume_path(path);
  } catch (const FsError& e) {
    return std::to_string(e.status) + " " + e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("volumes: paths parse with dbfs: or without, names fold to lower case") {
  auto p = parse_volume_path("dbfs:/Volumes/Main/Default/Ckpt/Sub/File.TXT");
  CHECK(p.parts == std::vector<std::string>{"main", "default", "ckpt", "Sub", "File.TXT"});
  CHECK(p.str() == "/Volumes/main/default/ckpt/Sub/File.TXT");
  CHECK(p.volume_key() == "main/default/ckpt");
  CHECK(parse_volume_path("/Volumes/main/default/ckpt/").is_volume_root());
  CHECK(parse_volume_path("/Volumes").parts.empty());
  CHECK_FALSE(parse_volume_path("/Volumes/main/default").in_volume());
}

TEST_CASE("volumes: paths that escape or break Unity Catalog's naming rules are refused") {
  CHECK(refusal("/Volumes/main/default/ckpt/../../../etc/passwd") ==
        "400 invalid volume path '/Volumes/main/default/ckpt/../../../etc/passwd': '.' and '..' segments are not allowed");
  CHECK(refusal("/Volumes/main/../x") ==
        "400 invalid volume path '/Volumes/main/../x': '.' and '..' segments are not allowed");
  CHECK(refusal("/tmp/x") == "400 invalid volume path '/tmp/x': volume paths start with /Volumes/<catalog>/<schema>/<volume>");
  CHECK(refusal("/VolumesX/a/b/c") ==
        "400 invalid volume path '/VolumesX/a/b/c': volume paths start with /Volumes/<catalog>/<schema>/<volume>");
  CHECK(refusal("/Volumes/main//ckpt") == "400 invalid volume path '/Volumes/main//ckpt': it has an empty segment ('//')");
  CHECK(refusal("/Volumes/my.cat/default/v") ==
        "400 invalid volume path '/Volumes/my.cat/default/v': the catalog name 'my.cat' has a character Unity Catalog "
        "does not allow in names (period, space or control character)");
  CHECK(refusal("/Volumes/main/my schema/v").find("the schema name 'my schema'") != std::string::npos);
  CHECK(refusal(std::string("/Volumes/main/default/v/a\nb")).find("control character") != std::string::npos);
  CHECK(refusal("/Volumes/main/default/" + std::string(256, 'v')).find("longer than 255") != std::string::npos);
  CHECK(refusal("/Volumes/main/default/ckpt/file.v1.txt") == "accepted");  // periods are fine below the volume
}

TEST_CASE("volumes: the paths a workload names are found in commands, parameters and env values") {
  auto found = volume_paths_in(
      "air-torchrun ... --set output_dir=/Volumes/main/default/ckpt/tiny && ls '/Volumes/main/default/data/'\n"
      "output_dir: /Volumes/Main/Default/air_checkpoints/llama31-8b-sft\nlog: \"/Volumes/main/default\"\n"
      "again: /Volumes/main/default/ckpt/tiny.\nper node: /Volumes/main/default/logs/n$NODE_RANK.txt");
  CHECK(found == std::vector<std::string>{"/Volumes/main/default/ckpt/tiny", "/Volumes/main/default/data",
                                          "/Volumes/main/default/air_checkpoints/llama31-8b-sft",
                                          "/Volumes/main/default/logs"});
}

TEST_CASE("volumes: a remote_volume snapshot's place and the Files API URL of a path") {
  std::string sha(64, 'a');
  CHECK(volume_snapshot_path("/Volumes/main/default/snaps", sha).str() ==
        "/Volumes/main/default/snaps/.internal/" + sha + ".tar.zst");
  CHECK(volume_snapshot_path("dbfs:/Volumes/main/default/snaps/team a/", sha).str() ==
        "/Volumes/main/default/snaps/team a/.internal/" + sha + ".tar.zst");
  CHECK_THROWS_AS(volume_snapshot_path("/Volumes/main/default", sha), FsError);  // a schema, not a volume
  CHECK_THROWS_AS(volume_snapshot_path("/Volumes/main/../x/y", sha), FsError);
  CHECK(files_api_url(parse_volume_path("/Volumes/main/default/v/a b/c%.txt")) ==
        "/api/2.0/fs/files/Volumes/main/default/v/a%20b/c%25.txt");
  CHECK(files_api_url(parse_volume_path("/Volumes/main/default/v"), "directories") ==
        "/api/2.0/fs/directories/Volumes/main/default/v");
}
