// The attempt lifecycle at its own seam (server/workspace/lifecycle.h): built from its parts (a real SQLite
// file, the run table, the queue, auth), with a recording backend at the process seam and a fake clock, no
// Workspace and no admission: a run is put straight into the run table and the tick is driven by hand.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <set>

#include "server/workspace/errors.h"
#include "server/workspace/lifecycle.h"
#include "server/workspace/queue.h"
#include "server/workspace/run_spec.h"
#include "server/workspace/services.h"

namespace fs = std::filesystem;
using namespace air::server;
using air::RunState;

namespace {

class AgentsBackend : public Backend {
 public:
  int total_gpus() const override { return 0; }
  int start_node(const NodeLaunch&) override { return ++next_pid; }
  bool agent_alive(int pid) override { return !dead.count(pid); }
  void kill_node(int pid) override {
    killed.push_back(pid);
    dead.insert(pid);
  }
  int next_pid = 100;
  std::set<int> dead;
  std::vector<int> killed;
};

struct Bench {
  std::string home;
  int64_t clock = 5'000'000;
  WorkspaceOptions opts;
  AgentsBackend backend;
  std::unique_ptr<Store> store;
  std::unique_ptr<IdentityStore> identity;
  std::unique_ptr<WorkspaceServices> services;
  std::unique_ptr<VolumeStore> volumes;
  std::unique_ptr<VolumeAccess> volume_access;
  std::unique_ptr<LogStore> logs;
  RunTable runs;
  std::unique_ptr<Queue> queue;
  std::unique_ptr<Auth> auth;
  std::unique_ptr<Lifecycle> lifecycle;

  Bench() {
    char t[] = "/tmp/air-lifecycle-test-XXXXXX";
    home = ::mkdtemp(t);
    opts.home = home;
    opts.ticker = false;
    opts.minute_ms = 1000;  // timeout_minutes: 1 lasts a second of the fake clock
    opts.now_ms = [this] { return clock; };
    const std::string db = home + "/workspace.db";
    store = std::make_unique<Store>(db);
    identity = std::make_unique<IdentityStore>(db, "admin");
    services = std::make_unique<WorkspaceServices>(db);
    volumes = std::make_unique<VolumeStore>(home + "/volumes");
    volume_access = std::make_unique<VolumeAccess>(db, *volumes, *identity, opts.now_ms);
    logs = std::make_unique<LogStore>(home + "/runs");
    queue = std::make_unique<Queue>(opts, backend.total_gpus(), runs, opts.now_ms);
    auth = std::make_unique<Auth>(*store, *identity, opts.now_ms, [](const std::string&) { return std::string("admin"); });
    lifecycle = std::make_unique<Lifecycle>(Lifecycle::Parts{opts, backend, *store, *logs, runs, *queue, *auth,
                                                             *services, *volume_access, *volumes, *identity});
    lifecycle->set_url("http://127.0.0.1:1");
  }
  ~Bench() {
    lifecycle.reset();
    fs::remove_all(home);
  }

  // A run of `nodes` CPU nodes as admission would have made it, queued, then one pass of the queue.
  std::string add(int nodes, int max_retries, std::optional<int> timeout_minutes = std::nullopt) {
    RunRecord r;
    r.seq = static_cast<int64_t>(runs.all().size()) + 1;
    r.info.run_id = "run" + std::to_string(r.seq);
    r.info.user = "admin";
    r.info.experiment_name = "lifecycle";
    set_state(r, RunState::kPending);
    r.info.num_nodes = nodes;
    r.info.max_retries = max_retries;
    r.info.timeout_minutes = timeout_minutes;
    r.info.submitted_at_ms = clock;
    RunSpec spec;
    spec.node.command = "true";
    r.spec_json = spec.to_json();
    std::lock_guard<std::mutex> g(runs.mu());
    std::string id = runs.add(std::move(r)).info.run_id;
    lifecycle->schedule();
    return id;
  }
  std::string report(const std::string& id, int attempt, int node, const std::string& state) {
    air::api::NodeStatusReport r;
    r.state = air::node_state_from_string(state).value();
    return lifecycle->node_status(id, attempt, node, r).action;
  }
  air::api::RunInfo info(const std::string& id) {
    std::lock_guard<std::mutex> g(runs.mu());
    return runs.find(id).wire();
  }
};

}  // namespace

TEST_CASE("lifecycle tick: a node silent past the heartbeat timeout is lost, the gang stops and the run retries") {
  Bench b;
  std::string id = b.add(2, 1);
  REQUIRE(b.info(id).attempts.size() == 1);
  CHECK(b.info(id).attempts[0].state == "PENDING");
  CHECK(b.report(id, 1, 0, "RUNNING") == "continue");
  CHECK(b.report(id, 1, 1, "RUNNING") == "continue");
  CHECK(b.info(id).state == "RUNNING");

  b.clock += b.opts.heartbeat_timeout_ms;  // exactly the timeout: not yet lost
  b.lifecycle->tick();
  CHECK(b.info(id).attempts[0].state == "RUNNING");

  CHECK(b.report(id, 1, 0, "RUNNING") == "continue");  // node 0 heartbeats, node 1 stays silent
  b.clock += 1;
  b.lifecycle->tick();
  air::api::RunInfo i = b.info(id);
  CHECK(i.attempts[0].nodes[1].state == air::NodeState::kLost);
  CHECK(i.attempts[0].reason == "lost node 1: no heartbeat for 15 s");
  CHECK(i.attempts[0].state == "RUNNING");  // node 0 is being stopped
  CHECK(b.report(id, 1, 0, "RUNNING") == "stop");
  b.report(id, 1, 0, "FAILED");  // it exits when told: the attempt ends, the run retries

  i = b.info(id);
  REQUIRE(i.attempts.size() == 2);
  CHECK(i.attempts[0].state == "FAILED");
  CHECK(i.attempts[1].state == "PENDING");
  CHECK(i.current_attempt == 2);
  CHECK(i.state == "RUNNING");  // the run itself is not over
}

TEST_CASE("lifecycle tick: timeout_minutes stops every node, those still alive after the stop grace are killed") {
  Bench b;
  std::string id = b.add(2, 3, 1);  // retries left, but a timeout is not retried
  b.report(id, 1, 0, "RUNNING");
  b.report(id, 1, 1, "RUNNING");
  int64_t started = b.clock;

  b.clock = started + 999;
  b.lifecycle->tick();
  CHECK(b.info(id).status_message == "all nodes running");

  b.clock = started + 1000;
  b.lifecycle->tick();
  CHECK(b.info(id).status_message == "timed out after 1 minute(s); stopping every node");
  CHECK(b.info(id).state == "RUNNING");

  // The agents keep answering but never exit: within the grace nothing is killed.
  b.clock = started + 1000 + b.opts.stop_grace_ms - 1;
  CHECK(b.report(id, 1, 0, "RUNNING") == "stop");
  CHECK(b.report(id, 1, 1, "RUNNING") == "stop");
  b.lifecycle->tick();
  CHECK(b.backend.killed.empty());
  CHECK(b.info(id).attempts[0].state == "RUNNING");

  b.clock += 1;  // the grace is over
  b.lifecycle->tick();
  CHECK(b.backend.killed == std::vector<int>{101, 102});
  air::api::RunInfo i = b.info(id);
  CHECK(i.attempts.size() == 1);
  CHECK(i.attempts[0].state == "TIMED_OUT");
  CHECK(i.attempts[0].nodes[0].state == air::NodeState::kLost);
  CHECK(i.attempts[0].nodes[0].message == "killed by the workspace: no exit 10 s after stop");
  CHECK(i.state == "TIMED_OUT");
  CHECK(i.ended_at_ms == b.clock);
}

TEST_CASE("lifecycle tick: during a cancel's grace a node whose agent is gone is not waited for") {
  Bench b;
  std::string id = b.add(2, 0);
  b.report(id, 1, 0, "RUNNING");
  b.report(id, 1, 1, "RUNNING");
  CHECK(b.lifecycle->cancel(id).state == "RUNNING");
  CHECK(b.info(id).status_message == "canceling: stopping every node");

  b.backend.dead.insert(101);  // node 0's agent exited without reporting
  b.clock += 1;
  b.lifecycle->tick();
  air::api::RunInfo i = b.info(id);
  CHECK(i.attempts[0].nodes[0].state == air::NodeState::kLost);
  CHECK(i.attempts[0].nodes[0].message == "agent exited while being stopped");
  CHECK(i.state == "RUNNING");  // node 1 still has its grace

  b.report(id, 1, 1, "FAILED");  // node 1 exits when told
  i = b.info(id);
  CHECK(i.attempts[0].state == "CANCELED");
  CHECK(i.state == "CANCELED");
  CHECK(b.backend.killed.empty());
}

TEST_CASE("lifecycle: an agent cannot report PENDING or LOST (the workspace's own verdicts) and its node is untouched") {
  Bench b;
  std::string id = b.add(1, 0);
  for (const char* s : {"PENDING", "LOST"}) {
    try {
      b.report(id, 1, 0, s);
      FAIL("the report was taken");
    } catch (const HttpError& e) {
      CHECK(e.status == 400);
      CHECK(std::string(e.what()) == std::string("a node cannot report the state '") + s + "'");
    }
  }
  CHECK(b.info(id).attempts[0].nodes[0].state == air::NodeState::kPending);
  CHECK(b.report(id, 1, 0, "RUNNING") == "continue");
  CHECK(b.info(id).attempts[0].nodes[0].state == air::NodeState::kRunning);
}
