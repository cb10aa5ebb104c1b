// The scheduler with a batch backend (the Slurm seam) faked at the job level and a fake clock: one launch
// per attempt, PENDING with the queue's reason, a job the batch system ended (time limit, node failure,
// scancel) ending the run with that reason, retries, cancel of a queued job, and a failing squeue.
#include <catch2/catch.hpp>

#include "core/base/error.h"
#include "server/workspace/workspace.h"
#include "tests/server/workspace/workspace_box.h"

using namespace air::server;

namespace {

struct Jobs {
  std::vector<AttemptLaunch> launched;
  std::map<std::string, JobState> states;  // what "squeue" says
  std::vector<std::string> canceled;
  std::string query_error;                 // non-empty: job_states throws this
  std::string launch_error;                // non-empty: launch_attempt throws this
  int polls = 0;
};

class FakeBatch : public Backend {
 public:
  explicit FakeBatch(Jobs& j) : j_(j) {}
  int total_gpus() const override { return -1; }
  bool batch() const override { return true; }
  AttemptLaunchResult launch_attempt(const AttemptLaunch& l) override {
    if (!j_.launch_error.empty()) throw air::Error(j_.launch_error);
    j_.launched.push_back(l);
    AttemptLaunchResult r;
    r.agent_pids.assign(l.num_nodes, 0);
    r.job_id = std::to_string(100 + j_.launched.size());
    r.message = "submitted as job " + r.job_id;
    j_.states[r.job_id] = {JobState::Phase::kQueued, "PENDING", "Resources", ""};
    return r;
  }
  std::map<std::string, JobState> job_states(const std::vector<std::string>& ids) override {
    ++j_.polls;
    if (!j_.query_error.empty()) throw air::Error(j_.query_error);
    std::map<std::string, JobState> out;
    for (const auto& id : ids)
      if (j_.states.count(id)) out[id] = j_.states[id];
    return out;
  }
  void cancel_job(const std::string& id) override {
    j_.canceled.push_back(id);
    if (j_.states.count(id) && j_.states[id].phase != JobState::Phase::kEnded)
      j_.states[id] = {JobState::Phase::kEnded, "CANCELLED", "", ""};
  }

 private:
  Jobs& j_;
};

using air::server::test::WorkspaceBox;

struct Fixture : WorkspaceBox {
  Jobs jobs;
  Fixture() : WorkspaceBox("jobs") { open(std::make_unique<FakeBatch>(jobs), {}, "http://10.0.0.1:8470"); }
  // Submits; the launch (sbatch) happens on the next tick, which `submit` runs unless told not to.
  std::string submit(const std::string& extra = "", const std::string& type = "CPU_1xHOST", int accels = 2,
                     bool launch = true) {
    air::api::SubmitRequest req;
    req.workload_yaml = "experiment_name: t\ncompute:\n  accelerator_type: " + type +
                        "\n  num_accelerators: " + std::to_string(accels) + "\ncommand: echo hi\n" + extra;
    req.file_name = "t.yaml";
    std::string id = ws->runs().submit(req).run_id;
    if (launch) ws->tick();
    return id;
  }
  void report(const std::string& id, int attempt, int node, const std::string& state, std::optional<int> code = {}) {
    report_node(id, attempt, node, state, code);
  }
};

}  // namespace

TEST_CASE("batch: one launch per attempt with the run's shape, and PENDING with the queue's reason") {
  Fixture f;
  std::string id = f.submit("timeout_minutes: 7\n", "GPU_8xH100", 16);
  REQUIRE(f.jobs.launched.size() == 1);
  const auto& l = f.jobs.launched[0];
  CHECK(l.num_nodes == 2);
  CHECK(l.gpu);
  CHECK(l.accelerators_per_node == 8);
  CHECK(l.timeout_minutes == 7);
  CHECK(l.server_url == "http://10.0.0.1:8470");
  CHECK(l.attempt_dir == f.home + "/runs/" + id + "/attempt_1");
  CHECK(f.ws->auth().authenticate(l.token));
  CHECK(f.get(id).attempts[0].job_id == "101");
  // Queued for longer than the heartbeat window: still PENDING, not lost.
  for (int i = 0; i < 30; ++i) f.tick();
  auto r = f.get(id);
  CHECK(r.state == "PENDING");
  CHECK(r.status_message == "pending in the Slurm queue as job 101 (reason: Resources)");
  // Running: the agents report as on the local backend.
  f.jobs.states["101"] = {JobState::Phase::kRunning, "RUNNING", "", "node[1-2]"};
  f.tick();
  CHECK(f.get(id).status_message == "Slurm job 101 running on node[1-2]; waiting for the node agents");
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  f.report(id, 1, 0, "SUCCEEDED", 0);
  f.report(id, 1, 1, "SUCCEEDED", 0);
  CHECK(f.get(id).state == "SUCCEEDED");
  f.jobs.states["101"] = {JobState::Phase::kEnded, "COMPLETED", "", "node[1-2]"};
  f.tick();
  CHECK(f.get(id).state == "SUCCEEDED");
  CHECK(f.jobs.canceled == std::vector<std::string>{"101"});  // scancel of an ended job is harmless
}

TEST_CASE("batch: Slurm's time limit ends the run TIMED_OUT with Slurm's reason, not retried") {
  Fixture f;
  std::string id = f.submit("max_retries: 2\ntimeout_minutes: 1\n");
  f.jobs.states["101"] = {JobState::Phase::kRunning, "RUNNING", "", "node[1-2]"};
  f.tick();
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  f.jobs.states["101"] = {JobState::Phase::kEnded, "TIMEOUT", "", "node[1-2]"};
  f.tick();
  auto r = f.get(id);
  CHECK(r.state == "TIMED_OUT");
  CHECK(r.status_message == "Slurm ended job 101: time limit reached (TIMEOUT)");
  CHECK(r.attempts.size() == 1);
  CHECK(r.attempts[0].nodes[1].state == air::NodeState::kLost);
}

TEST_CASE("batch: a node failure is a gang failure, retried as a new job per max_retries") {
  Fixture f;
  std::string id = f.submit("max_retries: 1\n");
  for (int attempt = 1; attempt <= 2; ++attempt) {
    std::string job = std::to_string(100 + attempt);
    f.jobs.states[job] = {JobState::Phase::kRunning, "RUNNING", "", "node[1-2]"};
    f.tick();
    f.report(id, attempt, 0, "RUNNING");
    f.jobs.states[job] = {JobState::Phase::kEnded, "NODE_FAIL", "", "node[1-2]"};
    f.tick();
  }
  auto r = f.get(id);
  CHECK(f.jobs.launched.size() == 2);
  CHECK(r.state == "FAILED");
  REQUIRE(r.attempts.size() == 2);
  CHECK(r.attempts[1].job_id == "102");
  CHECK(r.attempts[0].failing_node == 0);
  CHECK(r.status_message == "node 0 lost: Slurm ended job 102: node failure (NODE_FAIL) (after 2 attempts)");
}

TEST_CASE("batch: a node's own failure stops the gang, the job is scancelled when the attempt ends") {
  Fixture f;
  std::string id = f.submit("max_retries: 0\n");
  f.jobs.states["101"] = {JobState::Phase::kRunning, "RUNNING", "", "node[1-2]"};
  f.tick();
  f.report(id, 1, 0, "RUNNING");
  f.report(id, 1, 1, "RUNNING");
  f.report(id, 1, 1, "FAILED", 3);
  CHECK(f.get(id).state == "RUNNING");  // node 0 is being stopped
  f.report(id, 1, 0, "FAILED", 143);
  auto r = f.get(id);
  CHECK(r.state == "FAILED");
  CHECK(r.attempts[0].failing_node == 1);
  CHECK(r.status_message == "node 1 exited with code 3");
  f.tick();
  CHECK(f.jobs.canceled == std::vector<std::string>{"101"});
}

TEST_CASE("batch: cancel of a queued job scancels it and the run is CANCELED") {
  Fixture f;
  std::string id = f.submit();
  f.tick();
  f.ws->runs().cancel(id);
  f.tick();  // scancel runs outside the lock
  CHECK(f.jobs.canceled.size() >= 1);
  CHECK(f.jobs.canceled[0] == "101");
  f.tick();  // the poll sees CANCELLED
  CHECK(f.get(id).state == "CANCELED");
}

TEST_CASE("batch: a job cancelled outside air ends the run CANCELED, saying so") {
  Fixture f;
  std::string id = f.submit("max_retries: 3\n");
  f.jobs.states["101"] = {JobState::Phase::kEnded, "CANCELLED", "", ""};
  f.tick();
  auto r = f.get(id);
  CHECK(r.state == "CANCELED");
  CHECK(r.status_message == "Slurm ended job 101: canceled in Slurm (scancel) (CANCELLED)");
  CHECK(f.jobs.launched.size() == 1);
}

TEST_CASE("batch: a failing squeue is reported and blames no node, a job Slurm forgot is lost") {
  Fixture f;
  std::string id = f.submit("max_retries: 0\n");
  f.jobs.query_error = "cannot query Slurm: squeue did not answer within 15 s (is the Slurm controller up?)";
  for (int i = 0; i < 30; ++i) f.tick();
  auto r = f.get(id);
  CHECK(r.state == "PENDING");
  CHECK(r.status_message == f.jobs.query_error);
  f.jobs.query_error.clear();
  f.jobs.states.clear();
  f.tick();
  r = f.get(id);
  CHECK(r.state == "FAILED");
  CHECK(r.status_message == "node 0 lost: Slurm ended job 101: the job is no longer known to Slurm");
}

TEST_CASE("batch: the submission runs from the tick, a cancel meanwhile scancels the new job") {
  Fixture f;
  std::string id = f.submit("", "CPU_1xHOST", 2, false);
  CHECK(f.jobs.launched.empty());
  CHECK(f.get(id).status_message == "submitting the attempt to the batch system");
  f.ws->runs().cancel(id);
  f.tick();  // sbatch returns job 101 for an attempt already being stopped
  REQUIRE(f.jobs.launched.size() == 1);
  CHECK(f.get(id).state == "CANCELED");
  f.tick();
  CHECK(f.jobs.canceled.size() >= 1);
  CHECK(f.jobs.canceled[0] == "101");
}

TEST_CASE("batch: a failing sbatch fails every node with its message") {
  Fixture f;
  f.jobs.launch_error = "cannot submit to Slurm: sbatch exited with code 1: sbatch: error: invalid partition";
  std::string id = f.submit("max_retries: 0\n");
  f.tick();
  auto r = f.get(id);
  CHECK(r.state == "FAILED");
  CHECK(r.status_message == "could not launch the attempt: " + f.jobs.launch_error);
  CHECK(r.attempts[0].nodes[1].state == air::NodeState::kFailed);
}
