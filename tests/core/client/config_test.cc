// Which workspace the CLI talks to (core/client/config.h): Databricks' unified-auth precedence over real
// ~/.databrickscfg and $AIR_HOME/config files in a temporary HOME, and profiles written by `air auth login`.
#include <catch2/catch.hpp>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "core/client/config.h"

namespace fs = std::filesystem;

namespace {

// A temporary HOME with no auth variables set; both config files live in it.
struct Home {
  std::string dir;
  std::string old_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  Home() {
    char t[] = "/tmp/air-auth-test-XXXXXX";
    dir = ::mkdtemp(t);
    ::setenv("HOME", dir.c_str(), 1);
    ::setenv("AIR_HOME", (dir + "/.air").c_str(), 1);
    for (const char* v : {"AIR_HOST", "AIR_TOKEN", "AIR_CONFIG_FILE", "DATABRICKS_HOST", "DATABRICKS_TOKEN",
                          "DATABRICKS_CONFIG_PROFILE", "DATABRICKS_CONFIG_FILE"})
      ::unsetenv(v);
    fs::create_directories(dir + "/.air");
  }
  ~Home() {
    for (const char* v : {"AIR_HOST", "AIR_TOKEN", "DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CONFIG_PROFILE"})
      ::unsetenv(v);
    ::setenv("HOME", old_home.c_str(), 1);
    fs::remove_all(dir);
  }
  void databrickscfg(const std::string& text) const { std::ofstream(dir + "/.databrickscfg") << text; }
  void aircfg(const std::string& text) const { std::ofstream(dir + "/.air/config") << text; }
  std::string read(const std::string& name) const {
    std::ifstream in(dir + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

constexpr const char* kDbcfg = R"(; written by the Databricks CLI
[DEFAULT]
host  = https://dbc-default.cloud.databricks.com
token = dapi-default

[prod]
host = prod.example.com/
token = dapi-prod

[staging]
host = http://10.0.0.5:8470
token = dapi-staging
)";

}  // namespace

TEST_CASE("auth: one URL rule: a bare host means https, trailing slashes go") {
  CHECK(air::normalize_host("ws.example.com") == "https://ws.example.com");
  CHECK(air::normalize_host("10.0.0.5:8470/") == "https://10.0.0.5:8470");
  CHECK(air::normalize_host("http://127.0.0.1:8470//") == "http://127.0.0.1:8470");
  CHECK(air::normalize_host(" https://x.y ") == "https://x.y");
}

TEST_CASE("auth: nothing configured means the embedded default, [DEFAULT] of ~/.databrickscfg is not implied") {
  Home h;
  CHECK_FALSE(air::configured_workspace(""));
  h.databrickscfg(kDbcfg);
  CHECK_FALSE(air::configured_workspace(""));
  auto d = air::configured_workspace("DEFAULT");  // named, it is used
  REQUIRE(d);
  CHECK(d->url == "https://dbc-default.cloud.databricks.com");
}

TEST_CASE("auth: -p reads ~/.databrickscfg, then $AIR_HOME/config") {
  Home h;
  h.databrickscfg(kDbcfg);
  h.aircfg("[lab]\nhost = http://lab:8470\ntoken = t-lab\n[prod]\nhost = http://shadowed\ntoken = x\n");
  auto p = air::configured_workspace("prod");
  REQUIRE(p);
  CHECK(p->url == "https://prod.example.com");
  CHECK(p->token == "dapi-prod");
  CHECK(p->source == "-p prod (" + h.dir + "/.databrickscfg)");
  auto lab = air::configured_workspace("lab");
  REQUIRE(lab);
  CHECK(lab->url == "http://lab:8470");
  CHECK(lab->token == "t-lab");
}

TEST_CASE("auth: an unknown profile is a usage error naming the files and the known profiles, no token") {
  Home h;
  h.databrickscfg(kDbcfg);
  try {
    air::configured_workspace("nope");
    FAIL("no error");
  } catch (const air::Error& e) {
    CHECK(e.exit_code() == air::kExitUsage);
    CHECK(std::string(e.what()) == "unknown profile 'nope' (-p nope): not in " + h.dir + "/.databrickscfg nor " +
                                       h.dir + "/.air/config");
    CHECK(e.hint() == "known profiles: DEFAULT, prod, staging");
    CHECK(std::string(e.what()).find("dapi") == std::string::npos);
  }
}

TEST_CASE("auth: precedence -p > AIR_HOST > DATABRICKS_CONFIG_PROFILE > DATABRICKS_HOST > default_profile") {
  Home h;
  h.databrickscfg(std::string(kDbcfg) + "\n[__settings__]\ndefault_profile = staging\n");
  h.aircfg("[DEFAULT]\nhost = http://air-default\ntoken = t\n");
  CHECK(air::configured_workspace("")->url == "http://10.0.0.5:8470");  // default_profile beats air's DEFAULT
  ::setenv("DATABRICKS_HOST", "env.example.com", 1);
  ::setenv("DATABRICKS_TOKEN", "dapi-env", 1);
  auto env = air::configured_workspace("");
  CHECK(env->url == "https://env.example.com");
  CHECK(env->token == "dapi-env");
  CHECK(env->source == "DATABRICKS_HOST");
  ::setenv("DATABRICKS_CONFIG_PROFILE", "prod", 1);
  CHECK(air::configured_workspace("")->url == "https://prod.example.com");
  ::setenv("AIR_HOST", "http://127.0.0.1:9", 1);
  ::setenv("AIR_TOKEN", "t-air", 1);
  CHECK(air::configured_workspace("")->url == "http://127.0.0.1:9");
  CHECK(air::configured_workspace("staging")->url == "http://10.0.0.5:8470");  // -p wins over everything
}

TEST_CASE("auth: a host without its token is an error that says which variable is missing") {
  Home h;
  ::setenv("DATABRICKS_HOST", "env.example.com", 1);
  try {
    air::configured_workspace("");
    FAIL("no error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()) == "DATABRICKS_HOST is set but DATABRICKS_TOKEN is not");
  }
}

TEST_CASE("auth: air's own [DEFAULT] in $AIR_HOME/config still applies when nothing else is set") {
  Home h;
  h.aircfg("[DEFAULT]\nhost = 10.1.1.1:8470\ntoken = t\n");
  auto t = air::configured_workspace("");
  REQUIRE(t);
  CHECK(t->url == "https://10.1.1.1:8470");
}

TEST_CASE("auth: login writes a profile the Databricks CLI reads, keeping everything else, mode 0600") {
  Home h;
  h.databrickscfg(kDbcfg);
  std::string file = h.dir + "/.databrickscfg";
  air::write_profile(file, "lab", "lab.example.com", "dapi-lab", true);
  air::write_profile(file, "prod", "https://prod2.example.com", "dapi-prod2", false);
  std::string text = h.read(".databrickscfg");
  CHECK(text == R"(; written by the Databricks CLI
[DEFAULT]
host  = https://dbc-default.cloud.databricks.com
token = dapi-default

[prod]
host = https://prod2.example.com
token = dapi-prod2

[staging]
host = http://10.0.0.5:8470
token = dapi-staging

[lab]
host = https://lab.example.com
token = dapi-lab

[__settings__]
default_profile = lab
)");
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto t = air::configured_workspace("");  // lab is now the default profile
  REQUIRE(t);
  CHECK(t->url == "https://lab.example.com");
  auto ps = air::list_profiles();
  REQUIRE(ps.size() == 4);
  CHECK(ps[3].name == "lab");
  CHECK(ps[3].is_default);
  CHECK_FALSE(ps[0].is_default);
}
