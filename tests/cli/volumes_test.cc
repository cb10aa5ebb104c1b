// `air volumes` in-process against a real local workspace daemon (the built `air` binary, real HTTP on
// loopback, real SQLite): grant, list grants, revoke, list volumes, usage errors, and another user's
// refusal naming what is missing (without the token hint).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "core/client/local_daemon.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Result {
  int code;
  std::string out, err;
};

Result air_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "air");
  std::ostringstream out, err;
  int code = air::cli::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

struct Home {
  std::string dir;
  Home() {
    char t[] = "/tmp/air-cli-volumes-XXXXXX";
    dir = ::mkdtemp(t);
    ::setenv("AIR_HOME", dir.c_str(), 1);
    ::setenv("AIR_CONFIG_FILE", (dir + "/config").c_str(), 1);
    ::setenv("AIR_BIN_DIR", AIR_BIN_DIR, 1);
    ::unsetenv("AIR_HOST");
    ::unsetenv("AIR_TOKEN");
    ::setenv("DATABRICKS_CONFIG_FILE", (dir + "/databrickscfg").c_str(), 1);
    for (const char* v : {"DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CONFIG_PROFILE"}) ::unsetenv(v);
  }
  ~Home() {
    ::unsetenv("AIR_HOST");
    ::unsetenv("AIR_TOKEN");
    air::stop_local_daemon(dir);
    fs::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("cli: air volumes grants, lists and revokes, and refuses bad input and another user with the reason") {
  Home h;
  REQUIRE(air_cli({"fs", "mkdir", "dbfs:/Volumes/main/t/v"}).code == 0);
  auto bob = air_cli({"-o", "json", "users", "add", "bob", "--token"});
  REQUIRE(bob.code == 0);
  std::string bob_token = json::parse(bob.out)["data"]["token_value"];

  auto g = air_cli({"volumes", "grant", "main.t.v", "bob", "read"});
  CHECK(g.code == 0);
  CHECK(g.out == "Granted READ_VOLUME on main.t.v to bob\n");
  auto list = air_cli({"volumes", "grants", "dbfs:/Volumes/main/t/v"});
  CHECK(list.code == 0);
  CHECK(list.out == "bob                      READ_VOLUME\n");
  CHECK(air_cli({"volumes", "list"}).out.find("main.t.v") == 0);

  auto bad = air_cli({"volumes", "grant", "main.t.v", "bob", "OWN"});
  CHECK(bad.code == 2);
  CHECK(bad.err == "air: error: invalid privilege 'OWN'\n  hint: use READ_VOLUME or WRITE_VOLUME\n");
  // Two parts name a schema (issue 40: schemas and catalogs have grants too); four name nothing.
  auto schema = air_cli({"volumes", "grants", "main.t"});
  CHECK(schema.code == 0);
  auto bad_schema = air_cli({"volumes", "grant", "main.t", "bob", "READ_VOLUME"});
  CHECK(bad_schema.code == 2);
  CHECK(bad_schema.err == "air: error: invalid privilege 'READ_VOLUME'\n  hint: a schema takes USE_SCHEMA or CREATE_VOLUME\n");
  auto not_volume = air_cli({"volumes", "grants", "main.t.v.x"});
  CHECK(not_volume.code == 2);
  CHECK(not_volume.err.find("'main.t.v.x' is not a catalog, schema or volume") != std::string::npos);
  auto missing = air_cli({"volumes", "grants", "main.t.nope"});
  CHECK(missing.code == 1);
  CHECK(missing.err.find("volume main.t.nope does not exist; create it: air fs mkdir dbfs:/Volumes/main/t/nope") !=
        std::string::npos);

  // bob, with his own token, may read the grants but not change them; the refusal says why, no token hint.
  json server = json::parse(std::ifstream(h.dir + "/server.json"));
  ::setenv("AIR_HOST", server["url"].get<std::string>().c_str(), 1);
  ::setenv("AIR_TOKEN", bob_token.c_str(), 1);
  CHECK(air_cli({"volumes", "grants", "main.t.v"}).code == 0);
  auto refused = air_cli({"volumes", "revoke", "main.t.v", "bob", "READ_VOLUME"});
  CHECK(refused.code == 1);
  CHECK(refused.err.find("user 'bob' lacks ownership of volume main.t.v") != std::string::npos);
  CHECK(refused.err.find("hint") == std::string::npos);
  ::unsetenv("AIR_HOST");
  ::unsetenv("AIR_TOKEN");

  auto r = air_cli({"volumes", "revoke", "main.t.v", "bob", "READ_VOLUME"});
  CHECK(r.out == "Revoked READ_VOLUME on main.t.v from bob\n");
  CHECK(air_cli({"volumes", "grants", "main.t.v"}).out == "No grants on main.t.v (only its owner and admins may use it)\n");
}

TEST_CASE("cli: air fs rm needs only WRITE_VOLUME, as the API's DELETE does") {
  Home h;
  REQUIRE(air_cli({"fs", "mkdir", "dbfs:/Volumes/main/t/w/sub"}).code == 0);
  std::ofstream(h.dir + "/f.txt") << "data";
  REQUIRE(air_cli({"fs", "cp", h.dir + "/f.txt", "dbfs:/Volumes/main/t/w/f.txt"}).code == 0);
  REQUIRE(air_cli({"fs", "cp", h.dir + "/f.txt", "dbfs:/Volumes/main/t/w/g.txt"}).code == 0);
  auto bob = air_cli({"-o", "json", "users", "add", "bob", "--token"});
  REQUIRE(bob.code == 0);
  std::string bob_token = json::parse(bob.out)["data"]["token_value"];
  REQUIRE(air_cli({"volumes", "grant", "main.t.w", "bob", "WRITE_VOLUME"}).code == 0);

  json server = json::parse(std::ifstream(h.dir + "/server.json"));
  ::setenv("AIR_HOST", server["url"].get<std::string>().c_str(), 1);
  ::setenv("AIR_TOKEN", bob_token.c_str(), 1);
  auto read = air_cli({"fs", "ls", "dbfs:/Volumes/main/t/w"});  // bob may not read the volume...
  auto rm_file = air_cli({"fs", "rm", "dbfs:/Volumes/main/t/w/f.txt"});  // ...but may delete in it
  auto rm_dir = air_cli({"fs", "rm", "dbfs:/Volumes/main/t/w/sub"});
  auto rm_missing = air_cli({"fs", "rm", "dbfs:/Volumes/main/t/w/nope.txt"});
  ::unsetenv("AIR_HOST");
  ::unsetenv("AIR_TOKEN");
  CHECK(read.code == 1);
  CHECK(read.err.find("READ_VOLUME") != std::string::npos);
  CHECK(rm_file.code == 0);
  CHECK(rm_file.err.empty());
  CHECK(rm_dir.code == 0);
  CHECK(rm_missing.code == 1);
  CHECK(rm_missing.err.find("/Volumes/main/t/w/nope.txt does not exist") != std::string::npos);
  auto left = air_cli({"fs", "ls", "dbfs:/Volumes/main/t/w"});
  CHECK(left.code == 0);
  CHECK(left.out == "g.txt\n");
}
