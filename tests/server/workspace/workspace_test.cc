// The run state machine with a recording backend at the process seam and a fake clock: gang stop, retries,
// cancel, timeout, lost agents, restart re-attach, idempotency, and server-side validation.
#include <catch2/catch.hpp>

#include "server/workspace/services.h"
#include "server/workspace/workspace.h"
#include "tests/server/workspace/workspace_box.h"

using namespace air::server;
using air::api::NodeStatusReport;

namespace {

using air::server::test::WorkspaceBox;

struct Fixture : WorkspaceBox {
  explicit Fixture(int gpus = 0) : WorkspaceBox("ws") { open(gpus); }
  void open(int gpus = 0) { open_recording(gpus); }  // again: a new workspace over the same state
  std::string submit(const std::string& extra = "", const std::string& key = "", const std::string& type = "CPU_1xHOST",
                     int accels = 2) {
    air::api::SubmitRequest req;
    req.workload_yaml = "experiment_name: t\ncompute:\n  accelerator_type: " + type +
                        "\n  num_accelerators: " + std::to_string(accels) + "\ncommand: echo hi\n" + extra;
    req.file_name = "t.yaml";
    req.idempotency_key = key;
    return ws->runs().submit(req).run_id;
  }
  std::string report(const std::string& id, int attempt, int node, const std::string& state,
                     std::optional<int> code = std::nullopt, std::string msg = "") {
    return report_node(id, attempt, node, state, code, std::move(msg));
  }
};

}  // namespace

TEST_CASE("workspace: a 2-node run starts one agent per node and succeeds when both nodes do") {
  Fixture f;
  std::string id = f.submit();
  REQUIRE(f.rec.started.size() == 2);
  CHECK(f.rec.started[0].rank == 0);
  CHECK(f.rec.started[1].rank == 1);
  CHECK(f.rec.started[1].workdir == f.home + "/runs/" + id + "/attempt_1/node_1");
  CHECK(f.rec.started[0].token == f.rec.started[1].token);
  auto principal = f.ws->auth().authenticate(f.rec.started[0].token);
  REQUIRE(principal);
  CHECK_FALSE(principal->admin);
  CHECK(principal->run_id == id);
  CHECK(f.get(id).state == "PENDING");
  CHECK(f.report(id, 1, 0, "RUNNING") == "continue");
  CHECK(f.get(id).state == "RUNNING");
  CHECK(f.report(id, 1, 1, "RUNNING") == "continue");
  CHECK(f.report(id, 1, 0, "SUCCEEDED", 0) == "continue");
  CHECK(f.get(id).state == "RUNNING");
  f.report(id, 1, 1, "SUCCEEDED", 0);
  auto r = f.get(id);
  CHECK(r.state == "SUCCEEDED");
  CHECK(r.attempts.size() == 1);
  CHECK(r.ended_at_ms == f.clock);
  CHECK_FALSE(f.ws->auth().authenticate(f.rec.started[0].token));  // the attempt's token was revoked
  auto spec = f.ws->lifecycle().node_spec(id, 1, 1);
  CHECK(spec.num_nodes == 2);
  CHECK(spec.node_rank == 1);
  CHECK(spec.command == "echo hi");
  CHECK(spec.master_port > 0);
}

TEST_CASE("workspace: a failing node stops the others and the attempt is retried until max_retries") {
  Fixture f;
  std::string id = f.submit("max_retries: 1\n");
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  f.report(id, 1, 1, "FAILED", 3);
  CHECK(f.report(id, 1, 0, "RUNNING") == "stop");  // gang stop: node 0's heartbeat is answered "stop"
  f.report(id, 1, 0, "FAILED", 143, "stopped by workspace");
  auto r = f.get(id);
  REQUIRE(r.attempts.size() == 2);
  CHECK(r.attempts[0].state == "FAILED");
  CHECK(r.attempts[0].failing_node == 1);
  CHECK(r.attempts[0].failing_exit_code == 3);
  CHECK(r.attempts[0].failing_lines.back() == "RuntimeError: boom");
  CHECK(r.current_attempt == 2);
  CHECK(f.rec.started.size() == 4);
  CHECK(f.rec.started[2].attempt == 2);
  CHECK(f.report(id, 1, 0, "RUNNING") == "stop");  // the old attempt is over
  // The second attempt fails too: no retries left.
  f.report(id, 2, 0, "FAILED", 1);
  f.report(id, 2, 1, "FAILED", 143, "stopped by workspace");
  r = f.get(id);
  CHECK(r.state == "FAILED");
  CHECK(r.attempts.size() == 2);
  CHECK(r.attempts[1].failing_node == 0);
  CHECK(r.status_message == "node 0 exited with code 1 (after 2 attempts)");
}

TEST_CASE("workspace: cancel stops every node, agents that do not exit within the grace are killed") {
  Fixture f;
  std::string id = f.submit();
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  auto c = f.ws->runs().cancel(id);
  CHECK_FALSE(c.already_terminal);
  CHECK(f.report(id, 1, 0, "RUNNING") == "stop");
  f.report(id, 1, 0, "FAILED", 143, "stopped by workspace");
  f.clock += 5000;
  f.ws->tick();
  CHECK(f.get(id).state == "RUNNING");  // node 1 is still within its grace period
  f.clock += 6000;
  f.ws->tick();
  auto r = f.get(id);
  CHECK(r.state == "CANCELED");
  CHECK(r.attempts[0].nodes[1].state == air::NodeState::kLost);
  CHECK(std::find(f.rec.killed.begin(), f.rec.killed.end(), 1002) != f.rec.killed.end());
  CHECK(f.ws->runs().cancel(id).already_terminal);
}

TEST_CASE("workspace: a run past timeout_minutes ends TIMED_OUT") {
  Fixture f;
  std::string id = f.submit("timeout_minutes: 1\nmax_retries: 3\n");
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  f.clock += 30'000;
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  f.ws->tick();
  CHECK(f.get(id).state == "RUNNING");
  f.clock += 31'000;
  f.ws->tick();
  CHECK(f.report(id, 1, 0, "RUNNING") == "stop");
  f.report(id, 1, 0, "FAILED", 143, "stopped by workspace");
  f.report(id, 1, 1, "FAILED", 143, "stopped by workspace");
  auto r = f.get(id);
  CHECK(r.state == "TIMED_OUT");
  CHECK(r.attempts.size() == 1);  // a timeout is not retried
  CHECK(r.status_message == "timed out after 1 minute(s)");
}

TEST_CASE("workspace: an agent silent for 15 s is lost and fails the attempt") {
  Fixture f;
  std::string id = f.submit("max_retries: 0\n");
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  f.clock += 10'000;
  f.report(id, 1, 0, "RUNNING");
  f.clock += 6'000;
  f.ws->tick();
  auto r = f.get(id);
  CHECK(r.attempts[0].failing_node == 1);
  CHECK(r.attempts[0].reason == "lost node 1: no heartbeat for 15 s");
  CHECK(f.report(id, 1, 0, "RUNNING") == "stop");
  f.report(id, 1, 0, "FAILED", 143, "stopped by workspace");
  CHECK(f.get(id).state == "FAILED");
}

// The stall watchdog (stall_timeout_minutes): a running node whose log does not grow and whose attempt logs
// no metric for that long fails the attempt; a log chunk or a metric resets the clock.
TEST_CASE("workspace: the stall watchdog counts log lines and metrics as progress") {
  Fixture f;
  std::string id = f.submit("stall_timeout_minutes: 1\nmax_retries: 0\n");
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  f.ws->tick();  // the watchdog's clock starts at the nodes' first check
  for (int i = 0; i < 4; ++i) {  // 4 x 40 s: node 0 prints, node 1 only logs metrics
    f.clock += 40'000;
    f.report(id, 1, 0, "RUNNING");
    f.report(id, 1, 1, "RUNNING");
    f.ws->lifecycle().append_log(id, 1, 0, 100 * static_cast<uint64_t>(i), std::string(99, 'x') + "\n");
    f.ws->lifecycle().note_metrics(id, 1);
    f.ws->tick();
    REQUIRE(f.get(id).state == "RUNNING");
  }
  // Metrics stop; node 0 keeps printing: node 1 stalls after a minute.
  for (int i = 4; i < 6; ++i) {
    f.clock += 35'000;
    f.report(id, 1, 0, "RUNNING");
    f.report(id, 1, 1, "RUNNING");
    f.ws->lifecycle().append_log(id, 1, 0, 100 * static_cast<uint64_t>(i), std::string(99, 'x') + "\n");
    f.ws->tick();
  }
  auto r = f.get(id);
  REQUIRE(r.attempts[0].failing_node);
  CHECK(*r.attempts[0].failing_node == 1);
  CHECK(r.attempts[0].reason.find("node 1 stalled") != std::string::npos);
}

TEST_CASE("workspace: an agent process that exits without a final report fails the attempt at once") {
  Fixture f;
  std::string id = f.submit("max_retries: 0\n");
  f.report(id, 1, 0, "RUNNING");
  f.rec.dead.insert(1002);  // node 1's agent
  f.ws->tick();
  auto r = f.get(id);
  REQUIRE(r.attempts[0].failing_node);
  CHECK(*r.attempts[0].failing_node == 1);
  CHECK(r.attempts[0].nodes[1].state == air::NodeState::kLost);
}

TEST_CASE("workspace: after a restart, running agents re-attach by heartbeat, a silent one fails the attempt") {
  Fixture f;
  std::string id = f.submit("max_retries: 0\n");
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  std::string token = f.rec.started[0].token;
  f.open();  // a new workspace over the same state
  CHECK(f.get(id).state == "RUNNING");
  REQUIRE(f.ws->auth().authenticate(token));  // node tokens survive the restart
  f.clock += 14'000;
  CHECK(f.report(id, 1, 0, "RUNNING") == "continue");
  f.ws->tick();
  CHECK(f.get(id).state == "RUNNING");
  f.clock += 2'000;
  f.ws->tick();
  auto r = f.get(id);
  CHECK(r.attempts[0].reason == "the agent of node 1 did not re-attach within 15 s after the workspace restarted");
  f.report(id, 1, 0, "FAILED", 143, "stopped by workspace");
  CHECK(f.get(id).state == "FAILED");
}

TEST_CASE("workspace: the same idempotency key gives the same run") {
  Fixture f;
  std::string a = f.submit("", "key-7");
  std::string b = f.submit("", "key-7");
  std::string c = f.submit("idempotency_token: tok\n");
  std::string d = f.submit("idempotency_token: tok\n");
  CHECK(a == b);
  CHECK(c == d);
  CHECK(a != c);
  CHECK(f.ws->runs().list(0, true).runs.size() == 2);
}

TEST_CASE("workspace: an idempotency key still gives the same run after a workspace restart") {
  Fixture f;
  std::string a = f.submit("", "retry-after-network-error");
  std::string c = f.submit("idempotency_token: tok\n");
  f.open();  // a new workspace over the same SQLite state
  CHECK(f.submit("", "retry-after-network-error") == a);
  CHECK(f.submit("idempotency_token: tok\n") == c);
  CHECK(f.submit("", "another-key") != a);
  CHECK(f.ws->runs().list(0, true).runs.size() == 3);
}

TEST_CASE("workspace: submit re-validates, returns located diagnostics and refuses missing secrets") {
  Fixture f;
  air::api::SubmitRequest req;
  req.workload_yaml = "experiment_name: t\ncompute:\n  acelerator_type: CPU_1xHOST\n  num_accelerators: 2\ncommand: x\n";
  req.file_name = "t.yaml";
  try {
    f.ws->runs().submit(req);
    FAIL("expected an error");
  } catch (const HttpError& e) {
    CHECK(e.status == 400);
    REQUIRE_FALSE(e.diagnostics.empty());
    CHECK(e.diagnostics[0].file == "t.yaml");
    CHECK(e.diagnostics[0].line == 3);
  }
  const std::string secrets = "secrets:\n  HF_TOKEN: scope/key\n  OTHER: other/k2\n";
  try {
    f.submit(secrets);
    FAIL("expected an error");
  } catch (const HttpError& e) {
    CHECK(e.status == 400);
    CHECK(e.code == "SECRETS_MISSING");
    REQUIRE(e.diagnostics.size() == 2);  // every missing one, at once
    CHECK(e.diagnostics[0].message == "secret 'HF_TOKEN' references scope/key, which does not exist in the workspace");
    CHECK(e.diagnostics[1].message == "secret 'OTHER' references other/k2, which does not exist in the workspace");
    CHECK(e.diagnostics[1].hint ==
          "create it: air secrets put-secret other k2  (the value is read from stdin or a hidden prompt)");
  }
  CHECK(f.ws->runs().list(0, true).runs.empty());
  f.ws->services().secrets().create_scope("scope");
  f.ws->services().secrets().put_secret("scope", "key", "v4lue-1", false);
  f.ws->services().secrets().create_scope("other");
  f.ws->services().secrets().put_secret("other", "k2", "v4lue-2", false);
  std::string id = f.submit(secrets);
  auto spec = f.ws->lifecycle().node_spec(id, 1, 0);
  REQUIRE(spec.secrets.size() == 2);
  CHECK(spec.secrets[0].name == "HF_TOKEN");
  CHECK(spec.secrets[0].scope == "scope");
  CHECK(spec.secrets[0].key == "key");
  CHECK(nlohmann::json(spec).dump().find("v4lue") == std::string::npos);  // references only
}

TEST_CASE("workspace: GPU runs get disjoint CUDA_VISIBLE_DEVICES subsets, too many GPUs are refused") {
  Fixture f(4);
  std::string id = f.submit("", "", "GPU_1xH100", 2);
  REQUIRE(f.rec.started.size() == 2);
  CHECK(f.rec.started[0].gpus == "0");
  CHECK(f.rec.started[1].gpus == "1");
  std::string second = f.submit("", "", "GPU_1xH100", 2);
  CHECK(f.rec.started[2].gpus == "2");
  CHECK(f.rec.started[3].gpus == "3");
  std::string third = f.submit("", "", "GPU_1xH100", 2);
  CHECK(f.get(third).state == "PENDING");  // waits for GPUs
  CHECK(f.rec.started.size() == 4);
  f.report(id, 1, 0, "SUCCEEDED", 0);
  f.report(id, 1, 1, "SUCCEEDED", 0);
  f.ws->tick();
  REQUIRE(f.rec.started.size() == 6);
  CHECK(f.rec.started[4].gpus == "0");
  CHECK_THROWS_AS(f.submit("", "", "GPU_8xH100", 8), HttpError);
}
