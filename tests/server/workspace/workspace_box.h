// A whole Workspace for the tests that drive it through its façade (workspace, queue, fairness, batch jobs):
// a fresh home under /tmp (removed at the end), a fake clock, no ticker (the test ticks), the backend the test
// gives, and nodes' status reports made by hand as their agents would make them. AgentsBackend is the
// process seam most of them use: it records each launch and kill, and an agent is alive until killed (or put
// in `dead` by the test).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/workspace/workspace.h"

namespace air::server::test {

struct Recorder {
  std::vector<NodeLaunch> started;
  std::vector<int> killed;
  std::set<int> dead;          // agent pids that have exited
  bool kill_ends_agent = true;  // false: a killed agent lives on until its node reports (it must say FAILED)
};

class AgentsBackend : public Backend {
 public:
  AgentsBackend(Recorder& r, int gpus) : r_(r), gpus_(gpus) {}
  int total_gpus() const override { return gpus_; }
  int start_node(const NodeLaunch& l) override {
    r_.started.push_back(l);
    return 1000 + static_cast<int>(r_.started.size());
  }
  bool agent_alive(int pid) override { return !r_.dead.count(pid); }
  void kill_node(int pid) override {
    r_.killed.push_back(pid);
    if (r_.kill_ends_agent) r_.dead.insert(pid);
  }

 private:
  Recorder& r_;
  int gpus_;
};

class WorkspaceBox {
 public:
  std::string home;
  int64_t clock = 1'000'000;
  Recorder rec;
  std::unique_ptr<Workspace> ws;

  // `name` names the home: /tmp/air-<name>-test-XXXXXX. The workspace is not open yet: see open().
  explicit WorkspaceBox(const std::string& name) {
    std::string t = "/tmp/air-" + name + "-test-XXXXXX";
    home = ::mkdtemp(t.data());
  }
  WorkspaceBox(const WorkspaceBox&) = delete;
  WorkspaceBox& operator=(const WorkspaceBox&) = delete;
  ~WorkspaceBox() {
    ws.reset();
    std::filesystem::remove_all(home);
  }

  // Opens the workspace on `home` (a restart when it was open) with `backend`; `configure` sets the options
  // beyond the home, the clock and the ticker (pools, fair share).
  void open(std::unique_ptr<Backend> backend, const std::function<void(WorkspaceOptions&)>& configure = {},
            const std::string& url = "http://127.0.0.1:1") {
    ws.reset();
    WorkspaceOptions o;
    o.home = home;
    o.ticker = false;
    o.now_ms = [this] { return clock; };
    if (configure) configure(o);
    ws = std::make_unique<Workspace>(o, std::move(backend));
    ws->set_url(url);
    ws->start();
  }
  // Opens on an AgentsBackend of `gpus` GPUs.
  void open_recording(int gpus, const std::function<void(WorkspaceOptions&)>& configure = {}) {
    open(std::make_unique<AgentsBackend>(rec, gpus), configure);
  }

  void tick(int64_t ms = 1000) {
    clock += ms;
    ws->tick();
  }

  // One node's report, as its agent sends it (pid 4000 + node; a FAILED one carries two last lines). Returns
  // the workspace's answer: "continue" or "stop".
  std::string report_node(const std::string& id, int attempt, int node, const std::string& state,
                          std::optional<int> code = std::nullopt, std::string message = "") {
    api::NodeStatusReport r;
    r.state = node_state_from_string(state).value();
    r.exit_code = code;
    r.message = std::move(message);
    r.pid = 4000 + node;
    if (r.state == NodeState::kFailed) r.last_lines = {"Traceback", "RuntimeError: boom"};
    return ws->lifecycle().node_status(id, attempt, node, r).action;
  }
  // Every node of an attempt (0: the run's current one) reports the same state.
  void report_all(const std::string& id, int attempt, const std::string& state, std::optional<int> code = {}) {
    api::RunInfo info = ws->runs().get(id);
    if (attempt == 0) attempt = info.current_attempt;
    for (const auto& a : info.attempts)
      if (a.number == attempt)
        for (const auto& n : a.nodes) report_node(id, attempt, n.rank, state, code);
  }
  // The run's current attempt succeeds on every node.
  void finish(const std::string& id) { report_all(id, 0, "SUCCEEDED", 0); }
  bool started(const std::string& id) { return ws->runs().get(id).current_attempt > 0; }
  api::RunInfo get(const std::string& id) { return ws->runs().get(id); }
};

}  // namespace air::server::test
