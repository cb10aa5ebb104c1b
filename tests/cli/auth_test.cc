// `air auth login` and `air auth profiles` in-process, over real files in a temporary HOME: what login
// writes is what the Databricks CLI reads, profiles lists it without the token, and -p reaches it.
#include <catch2/catch.hpp>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.h"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string out, err;
};

// Runs air with `stdin_text` as standard input.
Result air_cli(std::vector<std::string> args, const std::string& stdin_text = "") {
  args.insert(args.begin(), "air");
  std::istringstream in(stdin_text);
  auto* old = std::cin.rdbuf(in.rdbuf());
  std::ostringstream out, err;
  int code = air::cli::run_cli(args, out, err);
  std::cin.rdbuf(old);
  return {code, out.str(), err.str()};
}

struct Home {
  std::string dir;
  std::string old_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  Home() {
    char t[] = "/tmp/air-cli-auth-XXXXXX";
    dir = ::mkdtemp(t);
    ::setenv("HOME", dir.c_str(), 1);
    ::setenv("AIR_HOME", (dir + "/.air").c_str(), 1);
    for (const char* v : {"AIR_HOST", "AIR_TOKEN", "AIR_CONFIG_FILE", "DATABRICKS_HOST", "DATABRICKS_TOKEN",
                          "DATABRICKS_CONFIG_PROFILE", "DATABRICKS_CONFIG_FILE"})
      ::unsetenv(v);
  }
  ~Home() {
    ::setenv("HOME", old_home.c_str(), 1);
    fs::remove_all(dir);
  }
  std::string cfg() const {
    std::ifstream in(dir + "/.databrickscfg");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

}  // namespace

TEST_CASE("auth: login --token-stdin writes ~/.databrickscfg, profiles lists it without the token") {
  Home h;
  auto r = air_cli({"auth", "login", "--host", "dbc-42.cloud.example.com/", "--token-stdin"}, "dapi-secret-1\n");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "Profile dbc-42 saved to " + h.dir + "/.databrickscfg (the default profile)\n");
  CHECK(h.cfg() == "[dbc-42]\nhost = https://dbc-42.cloud.example.com\ntoken = dapi-secret-1\n\n"
                   "[__settings__]\ndefault_profile = dbc-42\n");
  auto second = air_cli({"-p", "lab", "auth", "login", "--host", "http://127.0.0.1:1", "--token-stdin"}, "t-lab");
  CHECK(second.code == 0);
  CHECK(second.out == "Profile lab saved to " + h.dir + "/.databrickscfg\n");
  auto p = air_cli({"auth", "profiles"});
  CHECK(p.code == 0);
  CHECK(p.out.find("dbc-42 *") != std::string::npos);
  CHECK(p.out.find("http://127.0.0.1:1") != std::string::npos);
  CHECK(p.out.find("dapi") == std::string::npos);
  auto j = nlohmann::json::parse(air_cli({"auth", "profiles", "-o", "json"}).out);
  CHECK(j["data"]["profiles"].size() == 2);
  CHECK(j["data"]["profiles"][1] == nlohmann::json({{"name", "lab"}, {"host", "http://127.0.0.1:1"},
                                                     {"file", h.dir + "/.databrickscfg"}, {"has_token", true},
                                                     {"default", false}}));
  // -p lab goes where the profile says (nothing listens there: the error names the URL).
  auto l = air_cli({"-p", "lab", "list"});
  CHECK(l.code == 1);
  CHECK(l.err.rfind("air: error: cannot reach workspace at http://127.0.0.1:1: connection refused\n", 0) == 0);
}

TEST_CASE("auth: login refuses an empty token and a missing terminal") {
  Home h;
  auto empty = air_cli({"auth", "login", "--host", "x.example.com", "--token-stdin"}, "\n");
  CHECK(empty.code == 2);
  CHECK(empty.err.rfind("air: error: the token is empty\n", 0) == 0);
  if (!::isatty(0)) {
    auto noterm = air_cli({"auth", "login", "--host", "x.example.com"});
    CHECK(noterm.code == 2);
    CHECK(noterm.err.rfind("air: error: no terminal to ask for the token on\n", 0) == 0);
  }
  CHECK_FALSE(fs::exists(h.dir + "/.databrickscfg"));
}
