// Fair share, quotas and usage records in the workspace, with a recording backend of 8 GPUs and a fake
// clock: usage = each attempt's own duration x GPUs and survives a restart; a colleague's run goes before
// a sweep's; a group held to its quota, a run larger than it refused at submit.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "server/workspace/workspace.h"
#include "tests/server/workspace/workspace_box.h"

using namespace air::server;

namespace {

using air::server::test::WorkspaceBox;

// 8 GPUs whose killed agents live on until their nodes report; open() again is a restart over the same SQLite
// state, with `fair` as it is then.
struct Box : WorkspaceBox {
  sched::FairConfig fair;

  Box() : WorkspaceBox("fair") {
    rec.kill_ends_agent = false;
    open();
  }
  void open() { open_recording(8, [this](WorkspaceOptions& o) { o.fair = fair; }); }
  void member(const std::string& user, const std::string& group) {
    auto& ids = ws->auth().identity();
    if (!ids.group(group)) ids.add_group(group);
    ids.add_user(user, user, clock);
    ids.add_member(group, user);
  }
  std::string submit(const std::string& user, int gpus, const std::string& extra = "") {
    air::api::SubmitRequest req;
    std::string type = gpus < 8 ? "GPU_1xH100" : "GPU_8xH100";
    req.workload_yaml = "experiment_name: f\ncompute:\n  accelerator_type: " + type + "\n  num_accelerators: " +
                        std::to_string(gpus) + "\ncommand: sleep 1\n" + extra;
    req.file_name = "f.yaml";
    clock += 1;
    Principal p;
    p.user = user;
    p.groups = {"users"};
    return ws->runs().submit(req, p).run_id;
  }
  // Every node of the run's current attempt.
  void report(const std::string& id, const std::string& state, std::optional<int> code = {}) {
    report_all(id, 0, state, code);
  }
  int running() {
    int n = 0;
    for (const auto& r : ws->runs().list(1000, false).runs) n += r.current_attempt > 0 && r.state != "SUCCEEDED" ? 1 : 0;
    return n;
  }
};

}  // namespace

TEST_CASE("usage: GPU-seconds are each attempt's duration x GPUs, tagged, and survive a restart") {
  Box b;
  b.member("alice", "ml");
  std::string a = b.submit("alice", 2, "usage_policy_name: team-budget\n");
  std::string c = b.submit("carol", 1);
  b.report(a, "RUNNING");
  b.report(c, "RUNNING");
  b.clock += 90'000;
  b.finish(c);  // carol: 90 s x 1 GPU
  b.clock += 30'000;
  b.report(a, "FAILED", 1);  // alice: 120 s x 2 GPUs, FAILED (no retries)
  auto recs = b.ws->fairness().usage_since(0);
  REQUIRE(recs.size() == 2);
  int64_t a_started = b.ws->runs().get(a).attempts.at(0).started_at_ms, a_ended = b.ws->runs().get(a).attempts.at(0).ended_at_ms;
  int64_t c_started = b.ws->runs().get(c).attempts.at(0).started_at_ms, c_ended = b.ws->runs().get(c).attempts.at(0).ended_at_ms;
  const UsageRecord& rc = recs[0].user == "carol" ? recs[0] : recs[1];
  const UsageRecord& ra = recs[0].user == "alice" ? recs[0] : recs[1];
  CHECK(rc.gpu_ms() == (c_ended - c_started) * 1);
  CHECK(rc.gpu_ms() == 90'000);
  CHECK(ra.gpu_ms() == (a_ended - a_started) * 2);
  CHECK(ra.gpu_ms() == 240'002);  // alice's attempt began 1 ms before carol's (submitted 1 ms earlier)
  CHECK(ra.group == "ml");
  CHECK(ra.usage_policy_name == "team-budget");
  CHECK(ra.state == "FAILED");
  CHECK(rc.group.empty());
  auto by_user = UsageStore::totals(recs, "user");
  REQUIRE(by_user.size() == 2);
  CHECK((by_user[0].key == "alice" && by_user[0].gpu_ms == 240'002 && by_user[0].runs == 1));
  b.open();  // a restart: the records are in SQLite
  auto again = b.ws->fairness().usage_since(0);
  REQUIRE(again.size() == 2);
  CHECK(UsageStore::totals(again, "group")[0].key == "ml");
  CHECK(UsageStore::totals(again, "policy")[0].key == "team-budget");
  CHECK(b.ws->fairness().usage_since(c_ended + 1).size() == 1);  // --since
  CHECK(b.ws->fairness().usage_since(0, "carol").size() == 1);
}

TEST_CASE("fair share: bob's one run starts at the next free GPU, before alice's sweep") {
  Box b;
  std::vector<std::string> sweep;
  for (int k = 0; k < 16; ++k) sweep.push_back(b.submit("alice", 1));
  for (int k = 0; k < 8; ++k) b.report(sweep[k], "RUNNING");
  b.clock += 5000;
  std::string bob = b.submit("bob", 1);
  b.ws->tick();
  CHECK(b.ws->runs().get(bob).queue_position == 1);
  CHECK(b.ws->runs().get(sweep[8]).status_message.rfind("queued: position 2 of 9, behind 1 run of a user with less recent use", 0) == 0);
  b.clock += 15000;
  b.finish(sweep[0]);
  CHECK(b.started(bob));
  CHECK_FALSE(b.started(sweep[8]));
}

TEST_CASE("quotas: a group held to 4 GPUs never runs more, and a run larger than it is refused at submit") {
  Box b;
  b.fair.quotas = {{sched::Quota::Kind::kGroup, "ml", sched::kAllPools, 4, -1}};
  b.open();
  b.member("alice", "ml");
  b.member("bob", "ml");
  try {
    b.submit("alice", 8);
    FAIL("an 8-GPU run of a group held to 4 was accepted");
  } catch (const HttpError& e) {
    CHECK(e.status == 400);
    CHECK(std::string(e.what()) == "the run needs 8 GPUs, but the quota of group ml allows 4 at once; nothing was submitted");
  }
  std::vector<std::string> ids;
  for (int k = 0; k < 3; ++k) ids.push_back(b.submit("alice", 1));
  for (int k = 0; k < 3; ++k) ids.push_back(b.submit("bob", 1));
  std::string carol = b.submit("carol", 2);
  CHECK(b.running() == 5);  // 4 of ml's six 1-GPU runs, and carol's 2-GPU run
  CHECK(b.started(carol));
  std::string held;
  for (const auto& id : ids)
    if (!b.started(id)) held = id;
  REQUIRE(!held.empty());
  CHECK(b.ws->runs().get(held).status_message.rfind("waiting: quota of group ml, 4 of 4 GPUs in use (position", 0) == 0);
  // An admin's quota replaces the file's: 5 GPUs lets one more start.
  b.ws->fairness().set_quota({sched::Quota::Kind::kGroup, "ml", sched::kAllPools, 5, -1}, "admin");
  b.ws->tick();
  CHECK(b.running() == 6);
  // A pool the workspace does not have is refused, naming its pools.
  try {
    b.ws->fairness().set_quota({sched::Quota::Kind::kGroup, "ml", "trainig", 2, -1}, "admin");
    FAIL("a quota of an unknown pool was accepted");
  } catch (const HttpError& e) {
    CHECK(std::string(e.what()) == "pool 'trainig' is not a pool of this workspace (pools: default)");
  }
  auto q = b.ws->fairness().quotas();
  REQUIRE(q.size() == 1);
  CHECK((q[0].quota.max_gpus == 5 && q[0].set_by == "admin"));
  // Queued-runs quota: a user held to 1 waiting run.
  b.ws->fairness().set_quota({sched::Quota::Kind::kUser, "dave", sched::kAllPools, -1, 1}, "admin");
  for (int k = 0; k < 8; ++k) b.submit("erin", 1);  // fill the machine
  b.submit("dave", 1);
  CHECK_THROWS_WITH(b.submit("dave", 1), "the quota of user dave allows 1 queued run, and 1 is waiting; nothing was submitted");
}

TEST_CASE("quotas: with borrowing a group uses idle GPUs past its quota and gives them back") {
  Box b;
  b.fair.quotas = {{sched::Quota::Kind::kGroup, "ml", sched::kAllPools, 2, -1}};
  b.fair.borrowing = true;
  b.open();
  b.member("alice", "ml");
  std::vector<std::string> ml;
  for (int k = 0; k < 8; ++k) {
    ml.push_back(b.submit("alice", 1));
    b.report(ml.back(), "RUNNING");
    b.clock += 1000;
  }
  CHECK(b.running() == 8);  // 2 within quota, 6 borrowed
  std::string bob = b.submit("bob", 2);
  // The two most recently started borrowed runs are stopped for bob, no more.
  int stopping = 0;
  for (const auto& id : ml)
    if (b.ws->runs().get(id).status_message.find("preempted to give borrowed quota back to run " + bob) != std::string::npos)
      ++stopping;
  CHECK(stopping == 2);
  b.report(ml[7], "FAILED", 143);
  b.report(ml[6], "FAILED", 143);
  CHECK(b.started(bob));
  CHECK(b.ws->runs().get(ml[7]).attempts.at(0).state == "PREEMPTED");
}

TEST_CASE("estimates: a workload that took 20 s before is expected to take 20 s, the bound said beside it") {
  Box b;
  std::vector<std::string> first;
  for (int k = 0; k < 8; ++k) first.push_back(b.submit("alice", 1));
  b.clock += 20'000;
  for (const auto& id : first) b.finish(id);
  std::vector<std::string> again;
  for (int k = 0; k < 9; ++k) again.push_back(b.submit("alice", 1));
  b.clock += 5'000;
  b.ws->tick();
  auto w = b.ws->runs().get(again[8]);
  REQUIRE(w.current_attempt == 0);
  // Without history this was "estimated start in ~1 h" (default_runtime_minutes for every run ahead).
  CHECK(w.status_message ==
        "queued: position 1 of 1, waiting for 1 GPU, reserved: 0 of 1 held, estimated start in < 1 min "
        "(from earlier runtimes; in ~1 h if all use their full bound)");
  // The first runs took 20,000 to 20,007 ms (submitted a millisecond apart, ended together): the median.
  int64_t after = *w.estimated_start_ms - b.ws->runs().get(again[0]).attempts.at(0).started_at_ms;
  CHECK((after >= 20'000 && after <= 20'007));
}
