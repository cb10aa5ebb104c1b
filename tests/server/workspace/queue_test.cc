// The workspace's queue with a recording backend of 8 GPUs and a fake clock: submission order (also
// across a restart), the gang's reservation against later 1-GPU runs, the reasons a waiting run shows,
// pools, and a CRITICAL run preempting a BEST_EFFORT one (PREEMPTED, no retry spent, queued again).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "server/workspace/workspace.h"
#include "tests/server/workspace/workspace_box.h"

using namespace air::server;

namespace {

using air::server::test::WorkspaceBox;

// 8 GPUs; open() again is a restart over the same SQLite state, with `pools` as they are then.
struct Box : WorkspaceBox {
  std::vector<sched::Pool> pools;

  Box() : WorkspaceBox("queue") { open(); }
  void open() { open_recording(8, [this](WorkspaceOptions& o) { o.pools = pools; }); }
  std::string submit(int gpus, const std::string& extra = "", const std::string& pool = "") {
    air::api::SubmitRequest req;
    std::string type = gpus < 8 ? "GPU_1xH100" : "GPU_8xH100";
    req.workload_yaml = "experiment_name: q\ncompute:\n  accelerator_type: " + type + "\n  num_accelerators: " +
                        std::to_string(gpus) + "\n" + (pool.empty() ? "" : "  pool_id: " + pool + "\n") +
                        "command: sleep 1\ntimeout_minutes: 30\n" + extra;
    req.file_name = "q.yaml";
    clock += 1;  // submit times differ by a millisecond, as they would
    return ws->runs().submit(req).run_id;
  }
  void report(const std::string& id, int attempt, const std::string& state, std::optional<int> code = {}) {
    report_all(id, attempt, state, code);
  }
};

}  // namespace

TEST_CASE("queue: the 8-GPU gang keeps its reservation, 1-GPU runs submitted later wait behind it") {
  Box b;
  std::vector<std::string> ones;
  for (int k = 0; k < 8; ++k) ones.push_back(b.submit(1));
  std::string gang = b.submit(8);
  std::string later = b.submit(1);
  for (const auto& id : ones) CHECK(b.started(id));
  CHECK_FALSE(b.started(gang));
  CHECK(b.ws->runs().get(gang).status_message ==
        "queued: position 1 of 2, waiting for 8 GPUs, reserved: 0 of 8 held, estimated start in ~30 min");
  CHECK(b.ws->runs().get(gang).queue_position == 1);
  CHECK(b.ws->runs().get(later).status_message == "queued: position 2 of 2, waiting for 1 GPU, estimated start in ~1 h");
  // GPUs that free up are held for the gang: the later run would end after the gang's reserved start.
  for (int k = 0; k < 7; ++k) {
    b.clock += 10000;
    b.finish(ones[k]);
    for (int j = k + 1; j < 8; ++j) b.report(ones[j], 1, "RUNNING");  // heartbeats
    b.ws->tick();
    CHECK_FALSE(b.started(later));
  }
  CHECK(b.ws->runs().get(gang).gpus_reserved == 7);
  CHECK(b.ws->runs().get(gang).status_message.find("reserved: 7 of 8 held") != std::string::npos);
  b.finish(ones[7]);
  CHECK(b.started(gang));
  CHECK_FALSE(b.started(later));
  CHECK(b.ws->runs().get(gang).queue_position == 0);  // no longer queued
  b.finish(gang);
  CHECK(b.started(later));
}

TEST_CASE("queue: waiting runs start in submission order, also after a workspace restart") {
  Box b;
  std::string blocker = b.submit(8);
  std::vector<std::string> waiting;
  for (int k = 0; k < 5; ++k) waiting.push_back(b.submit(8));
  b.open();  // a restart: the run table comes back from SQLite
  b.ws->tick();
  for (int k = 0; k < 5; ++k)
    CHECK(b.ws->runs().get(waiting[k]).status_message.rfind(fmt::format("queued: position {} of 5", k + 1), 0) == 0);
  b.report(blocker, 1, "RUNNING");
  std::string previous = blocker;
  for (const auto& id : waiting) {
    b.finish(previous);
    CHECK(b.started(id));
    for (const auto& other : waiting)
      if (other != id && !b.started(other)) CHECK(b.ws->runs().get(other).queue_position > 0);
    previous = id;
  }
}

TEST_CASE("queue: a CRITICAL run preempts a BEST_EFFORT one, the preempted attempt spends no retry") {
  Box b;
  std::string be = b.submit(8, "priority_class: BEST_EFFORT\nmax_retries: 0\n");
  b.report(be, 1, "RUNNING");
  std::string normal = b.submit(8);
  std::string crit = b.submit(8, "priority_class: CRITICAL\n");
  auto v = b.ws->runs().get(be);
  CHECK(v.status_message == "preempted by CRITICAL run " + crit + "; stopping every node");
  CHECK(b.ws->runs().get(crit).status_message.find("stopping BEST_EFFORT runs for it") != std::string::npos);
  CHECK(b.ws->runs().get(crit).queue_position == 1);  // before the NORMAL run submitted earlier
  b.report(be, 1, "FAILED", 143);  // the agents stop their commands
  v = b.ws->runs().get(be);
  CHECK(v.attempts.at(0).state == "PREEMPTED");
  CHECK(v.attempts.at(0).reason == "preempted by CRITICAL run " + crit);
  CHECK(v.state == "PENDING");
  CHECK(b.started(crit));
  CHECK(v.status_message.rfind("attempt 1 preempted by CRITICAL run " + crit + "; queued: position 2 of 2", 0) == 0);
  b.finish(crit);
  CHECK(b.started(normal));  // NORMAL before BEST_EFFORT, whatever their submit times
  CHECK(b.ws->runs().get(be).current_attempt == 1);
  b.finish(normal);
  v = b.ws->runs().get(be);
  REQUIRE(v.current_attempt == 2);  // max_retries 0, yet a second attempt: preemption is not a failure
  b.report(be, 2, "RUNNING");
  b.finish(be);
  CHECK(b.ws->runs().get(be).state == "SUCCEEDED");
}

TEST_CASE("queue: pools split the machine, an unknown pool is refused, a run too big for its pool too") {
  Box b;
  b.pools = {{"train", 6}, {"dev", 2}};
  b.open();
  std::string d1 = b.submit(1, "", "dev"), d2 = b.submit(1, "", "dev"), d3 = b.submit(1, "", "dev");
  REQUIRE(b.rec.started.size() == 2);
  CHECK(b.rec.started[0].gpus == "6");  // dev takes the GPUs after train's six
  CHECK(b.rec.started[1].gpus == "7");
  CHECK(b.ws->runs().get(d3).status_message.rfind("queued: position 1 of 1 in pool 'dev', waiting for 1 GPU", 0) == 0);
  std::string t = b.submit(1);  // no pool_id: the first pool, train (there is no pool named default)
  CHECK(b.rec.started.back().gpus == "0");
  CHECK(b.ws->runs().get(t).pool_id == "train");
  CHECK_THROWS_WITH(b.submit(1, "", "prod"), "compute.pool_id 'prod' is not a pool of this workspace (pools: train, dev)");
  CHECK_THROWS_WITH(b.submit(8, "", "dev"), "8 x GPU_8xH100 needs 8 GPUs on 1 node(s), but pool 'dev' has 2");
  b.finish(d1);
  CHECK(b.started(d3));
  (void)d2;
}
