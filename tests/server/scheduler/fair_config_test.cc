// server.conf's [fair_share], [shares] and [quotas]: what they set, and each mistake located by file:line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/base/error.h"
#include "server/workspace/config.h"

using namespace air::server;

namespace {

std::string conf_file(const std::string& text) {
  char t[] = "/tmp/air-fair-conf-XXXXXX";
  std::string dir = ::mkdtemp(t);
  std::ofstream(dir + "/server.conf") << text;
  return dir + "/server.conf";
}

std::string error_of(const std::string& text) {
  std::string path = conf_file(text);
  try {
    read_server_config(path);
  } catch (const air::Error& e) {
    std::filesystem::remove_all(std::filesystem::path(path).parent_path());
    std::string what = e.what();
    return what.substr(what.find("server.conf"));
  }
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  return "";
}

}  // namespace

TEST_CASE("server.conf: fair share, shares and quotas", "[sched][config]") {
  std::string path = conf_file(R"([pools]
training = 6
[fair_share]
half_life_hours = 24
borrowing = true
[shares]
group ml-research = 10
user alice = 2.5
[quotas]
group ml-research = 16 gpus, 200 queued
user alice pool training = 4 gpus
)");
  ServerConfig c = read_server_config(path);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  CHECK(c.fair.enabled);
  CHECK(c.fair.borrowing);
  CHECK(c.fair.half_life_ms == 24 * 3600 * 1000LL);
  CHECK(c.fair.group_shares.at("ml-research") == 10);
  CHECK(c.fair.user_shares.at("alice") == 2.5);
  REQUIRE(c.fair.quotas.size() == 2);
  CHECK((c.fair.quotas[0].name == "ml-research" && c.fair.quotas[0].pool == "*" && c.fair.quotas[0].max_gpus == 16 &&
         c.fair.quotas[0].max_queued == 200));
  CHECK((c.fair.quotas[1].kind == air::server::sched::Quota::Kind::kUser && c.fair.quotas[1].pool == "training" &&
         c.fair.quotas[1].max_gpus == 4 && c.fair.quotas[1].max_queued == -1));
}

TEST_CASE("server.conf: mistakes in the fair-share sections name the file and line", "[sched][config]") {
  CHECK(error_of("[fair_share]\nenabled = yes\n") == "server.conf:2: 'enabled' must be true or false, got 'yes'");
  CHECK(error_of("[fair_share]\nhalf_life = 3\n") ==
        "server.conf:2: unknown key 'half_life' in [fair_share] (enabled, half_life_hours, borrowing)");
  CHECK(error_of("[shares]\nteam ml = 3\n") ==
        "server.conf:2: expected 'user NAME' or 'group NAME' before '=', got 'team ml'");
  CHECK(error_of("[shares]\nuser a = 0\n") == "server.conf:2: the share of user a must be a number > 0, got '0'");
  CHECK(error_of("[quotas]\n\ngroup ml = 16 cpus\n") == "server.conf:3: unknown limit 'cpus' (gpus or queued)");
  CHECK(error_of("[quotas]\ngroup ml = lots\n") == "server.conf:2: expected limits like '16 gpus, 200 queued', got 'lots'");
  CHECK(error_of("[quotas]\ngroup ml = 4 gpus\ngroup ml = 5 gpus\n") == "server.conf:3: the quota of group ml is given twice");
  CHECK(error_of("[quotas]\nuser a in b = 4 gpus\n") ==
        "server.conf:2: expected 'user a' or 'user a pool POOL' before '=', got 'user a in b'");
}
