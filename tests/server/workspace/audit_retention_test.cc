// Audit retention (`air server --audit-retention-days`): entries past the window are deleted when the
// workspace starts and then once an hour of its clock; 0 keeps everything. A real SQLite file, a test clock.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "server/workspace/workspace.h"

namespace fs = std::filesystem;
using namespace air::server;

namespace {

class NoBackend : public Backend {
 public:
  int total_gpus() const override { return 0; }
  int start_node(const NodeLaunch&) override { return 1; }
  bool agent_alive(int) override { return false; }
};

constexpr int64_t kDay = 86'400'000;

struct Home {
  std::string dir;
  std::atomic<int64_t> clock{1000 * kDay};
  Home() {
    char t[] = "/tmp/air-audit-retention-XXXXXX";
    dir = ::mkdtemp(t);
  }
  ~Home() { fs::remove_all(dir); }
  std::unique_ptr<Workspace> open(int days) {
    WorkspaceOptions o;
    o.home = dir;
    o.ticker = false;
    o.audit_retention_days = days;
    o.now_ms = [this] { return clock.load(); };
    return std::make_unique<Workspace>(o, std::make_unique<NoBackend>());
  }
  static std::vector<std::string> routes(Workspace& ws) {
    std::vector<std::string> out;
    for (const auto& e : ws.auth().identity().audit_log({})) out.push_back(e.route);
    return out;
  }
};

}  // namespace

TEST_CASE("audit retention: old entries go at start and hourly, recent ones stay, 0 keeps all") {
  Home h;
  {
    auto ws = h.open(0);  // a workspace that kept everything so far
    ws->start();
    int64_t now = h.clock;
    ws->auth().identity().audit({0, now - 400 * kDay, "alice", "POST", "/very-old", "", 200});
    ws->auth().identity().audit({0, now - 31 * kDay, "alice", "POST", "/old", "", 200});
    ws->auth().identity().audit({0, now - 29 * kDay, "alice", "POST", "/recent", "", 200});
    ws->tick();
    CHECK(Home::routes(*ws) == std::vector<std::string>{"/very-old", "/old", "/recent"});
  }
  {
    auto ws = h.open(365);  // the default: a year
    ws->start();
    CHECK(Home::routes(*ws) == std::vector<std::string>{"/old", "/recent"});
  }
  auto ws = h.open(30);
  ws->start();
  CHECK(Home::routes(*ws) == std::vector<std::string>{"/recent"});
  // Two days later the last one is past 30 days: the tick prunes it once an hour has passed, not before.
  h.clock += 2 * kDay;
  ws->auth().identity().audit({0, h.clock, "bob", "POST", "/now", "", 200});
  ws->tick();
  CHECK(Home::routes(*ws) == std::vector<std::string>{"/now"});
  h.clock += 30 * kDay - 1000;
  ws->tick();  // the hour since the last prune has passed: /now is just inside 30 days and stays
  CHECK(Home::routes(*ws) == std::vector<std::string>{"/now"});
  h.clock += 30 * 60'000;
  ws->tick();  // past 30 days, but only half an hour since the last prune
  CHECK(Home::routes(*ws) == std::vector<std::string>{"/now"});
  h.clock += 31 * 60'000;
  ws->tick();
  CHECK(Home::routes(*ws).empty());
}
