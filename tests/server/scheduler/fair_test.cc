// Fair share, quotas, borrowing, the least preemption and estimates from history (issue 44), on the pure
// policy: one rule per case, with the texts a waiting run shows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "server/scheduler/estimate.h"
#include "server/scheduler/policy.h"

using namespace air::server::sched;

namespace {

constexpr int64_t kMin = 60000;
constexpr int64_t kHour = 60 * kMin;

QueuedJob job(std::string id, std::string owner, int gpus, int64_t submitted, std::string group = "",
              PriorityClass p = PriorityClass::kNormal) {
  QueuedJob j;
  j.id = std::move(id);
  j.owner = std::move(owner);
  j.group = std::move(group);
  j.gpus = gpus;
  j.submitted_ms = submitted;
  j.runtime_bound_ms = 30 * kMin;
  j.priority = p;
  j.pool = "default";
  return j;
}

RunningJob run(std::string id, std::string owner, int gpus, int64_t started, std::string group = "",
               PriorityClass p = PriorityClass::kNormal) {
  RunningJob r;
  r.id = std::move(id);
  r.owner = std::move(owner);
  r.group = std::move(group);
  r.gpus = gpus;
  r.started_ms = started;
  r.runtime_bound_ms = 30 * kMin;
  r.priority = p;
  r.pool = "default";
  return r;
}

Input box(int gpus, int64_t now) {
  Input in;
  in.now_ms = now;
  in.pools = {{"default", gpus}};
  return in;
}

std::vector<std::string> ids(const Decisions& d) {
  std::vector<std::string> out;
  for (const auto& s : d.starts) out.push_back(s.id + (s.borrowed ? "~" : ""));
  return out;
}

std::vector<std::string> queue_order(const Decisions& d) {
  std::vector<std::string> out;
  for (const auto& w : d.waiting) out.push_back(w.id);
  return out;
}

const Waiting& waiting(const Decisions& d, const std::string& id) {
  for (const auto& w : d.waiting)
    if (w.id == id) return w;
  FAIL("no waiting entry for " << id);
  throw 0;
}

using V = std::vector<std::string>;
const Options kFair{.fair_share = true};

}  // namespace

TEST_CASE("fair share: a sweep of 16 does not hold a colleague's one run behind it", "[sched][fair]") {
  // The case: 8 GPUs, alice's 16 one-GPU runs (8 running), then bob's one.
  Input in = box(8, 20000);
  for (int k = 0; k < 8; ++k) in.running.push_back(run("a" + std::to_string(k), "alice", 1, 1000));
  for (int k = 8; k < 16; ++k) in.queued.push_back(job("a" + std::to_string(k), "alice", 1, 1000 + k));
  in.queued.push_back(job("bob", "bob", 1, 19000));
  Decisions fcfs = decide(in);
  CHECK(waiting(fcfs, "bob").position == 9);
  Decisions fair = decide(in, kFair);
  CHECK(waiting(fair, "bob").position == 1);
  CHECK(waiting(fair, "bob").passed_by == 0);
  CHECK(waiting(fair, "a8").position == 2);
  CHECK(describe(waiting(fair, "a8"), in.now_ms) ==
        "queued: position 2 of 9, behind 1 run of a user with less recent use, waiting for 1 GPU, "
        "estimated start in ~30 min");
  // The next GPU that frees goes to bob.
  in.running.erase(in.running.begin());
  CHECK(ids(decide(in, kFair)) == V{"bob"});
  CHECK(ids(decide(in)) == V{"a8"});
}

TEST_CASE("fair share: owners take turns, weighed by recorded usage and shares", "[sched][fair]") {
  Input in = box(1, 0);
  in.running = {run("busy", "carol", 1, 0)};
  for (int k = 0; k < 3; ++k) {
    in.queued.push_back(job("a" + std::to_string(k), "alice", 1, 10 + k));
    in.queued.push_back(job("b" + std::to_string(k), "bob", 1, 20 + k));
  }
  // No usage: turns, the earlier submitter first at each tie.
  CHECK(queue_order(decide(in, kFair)) == V{"a0", "b0", "a1", "b1", "a2", "b2"});
  // Alice used 2 GPU-hours lately (decayed): bob's runs go first until his placed runs weigh as much
  // (each placed run counts its GPUs x bound, 30 min).
  in.usage.user_usage["alice"] = 2.0 * kHour;
  CHECK(queue_order(decide(in, kFair)) == V{"b0", "b1", "b2", "a0", "a1", "a2"});
  in.usage.user_usage["alice"] = 0.75 * kHour;
  CHECK(queue_order(decide(in, kFair)) == V{"b0", "b1", "a0", "b2", "a1", "a2"});
  // Shares: alice's share of 4 makes her usage (and each run she places) weigh a quarter.
  in.usage.user_shares["alice"] = 4;
  CHECK(queue_order(decide(in, kFair)) == V{"b0", "a0", "a1", "a2", "b1", "b2"});
  // Classes still come first: a CRITICAL run of the heaviest user leads.
  in.queued.push_back(job("crit", "alice", 1, 99, "", PriorityClass::kCritical));
  CHECK(queue_order(decide(in, kFair)).front() == "crit");
}

TEST_CASE("fair share: groups are weighed first, then their members", "[sched][fair]") {
  Input in = box(1, 0);
  in.running = {run("busy", "x", 1, 0)};
  in.queued = {job("ml1", "alice", 1, 1, "ml"), job("ml2", "bob", 1, 2, "ml"), job("cv1", "carol", 1, 3, "cv")};
  in.usage.group_usage = {{"ml", 1.0 * kHour}};
  in.usage.user_usage = {{"alice", 1.0 * kHour}};  // all of ml's use is alice's
  // cv has used nothing: carol first; within ml bob (no use) before alice.
  CHECK(queue_order(decide(in, kFair)) == V{"cv1", "ml2", "ml1"});
  in.usage.group_usage["cv"] = 0.1 * kHour;  // cv used a little, ml much more but with 100 shares
  in.usage.group_shares = {{"ml", 100}};
  CHECK(queue_order(decide(in, kFair)) == V{"ml2", "ml1", "cv1"});
}

TEST_CASE("fair share: usage decays with its half-life", "[sched][fair]") {
  DecayedUsage u(kHour);
  u.add("alice", 8.0, 0);
  CHECK(u.at("alice", 0) == 8.0);
  CHECK(u.at("alice", kHour) == Approx(4.0));
  CHECK(u.at("alice", 3 * kHour) == Approx(1.0));
  u.add("alice", 1.0, 3 * kHour);
  CHECK(u.at("alice", 3 * kHour) == Approx(2.0));
  // An older record read after a newer one (history replayed in any order) lands the same.
  DecayedUsage v(kHour);
  v.add("alice", 1.0, 3 * kHour);
  v.add("alice", 8.0, 0);
  CHECK(v.at("alice", 4 * kHour) == Approx(u.at("alice", 4 * kHour)));
  CHECK(DecayedUsage(0).at("nobody", 5) == 0);
  DecayedUsage never(0);
  never.add("k", 3, 0);
  CHECK(never.at("k", 1000 * kHour) == 3);
}

TEST_CASE("quotas: a group held to 4 GPUs waits with the reason, others pass it", "[sched][quota]") {
  Input in = box(8, 0);
  in.quotas = {{Quota::Kind::kGroup, "ml-research", kAllPools, 4, -1}};
  in.running = {run("r1", "alice", 2, 0, "ml-research"), run("r2", "bob", 2, 0, "ml-research")};
  in.queued = {job("ml3", "alice", 1, 10, "ml-research"), job("other", "carol", 2, 20)};
  Decisions d = decide(in);
  CHECK(ids(d) == V{"other"});
  const Waiting& w = waiting(d, "ml3");
  CHECK(w.quota_block == "quota of group ml-research, 4 of 4 GPUs in use");
  CHECK(!w.estimated_start_ms);
  CHECK(describe(w, 0) == "waiting: quota of group ml-research, 4 of 4 GPUs in use (position 1 of 1)");
  // A per-pool quota names its pool; a user quota applies to the user alone.
  in.quotas = {{Quota::Kind::kUser, "alice", "default", 2, -1}};
  d = decide(in);
  CHECK(ids(d) == V{"other"});
  CHECK(waiting(d, "ml3").quota_block == "quota of user alice in pool 'default', 2 of 2 GPUs in use");
  in.quotas[0].pool = "training";
  CHECK(ids(decide(in)) == V{"ml3", "other"});
}

TEST_CASE("quotas: starts in one pass never take a group past its GPUs", "[sched][quota]") {
  Input in = box(16, 0);
  in.quotas = {{Quota::Kind::kGroup, "ml", kAllPools, 4, -1}};
  for (int k = 0; k < 10; ++k) in.queued.push_back(job("m" + std::to_string(k), "u" + std::to_string(k % 3), 1, k, "ml"));
  in.queued.push_back(job("big", "zed", 3, 50, "ml"));
  Decisions d = decide(in);
  CHECK(ids(d) == V{"m0", "m1", "m2", "m3"});
  CHECK(waiting(d, "big").quota_block == "quota of group ml, 4 of 4 GPUs in use");
}

TEST_CASE("quotas: borrowing lends idle GPUs and a run within quota takes them back", "[sched][quota]") {
  Input in = box(8, 0);
  in.quotas = {{Quota::Kind::kGroup, "ml", kAllPools, 2, -1}};
  for (int k = 0; k < 6; ++k) in.queued.push_back(job("m" + std::to_string(k), "alice", 1, k, "ml"));
  CHECK(ids(decide(in)) == V{"m0", "m1"});
  Options o{.borrowing = true};
  CHECK(ids(decide(in, o)) == V{"m0", "m1", "m2~", "m3~", "m4~", "m5~"});
  // All six run (started a minute apart); bob's 3-GPU run arrives with 2 GPUs free: the most recently
  // started borrowed run is stopped (1 GPU), not more.
  in.queued.clear();
  for (int k = 0; k < 6; ++k) in.running.push_back(run("m" + std::to_string(k), "alice", 1, k * kMin, "ml"));
  in.now_ms = 10 * kMin;
  in.queued = {job("bob", "bob", 3, 9 * kMin)};
  Decisions d = decide(in, o);
  REQUIRE(d.preemptions.size() == 1);
  CHECK(d.preemptions[0].victim == "m5");
  CHECK(d.preemptions[0].reclaim);
  CHECK(d.preemptions[0].for_job == "bob");
  // Without borrowing nothing is reclaimed (those runs are within what the workspace allowed).
  CHECK(decide(in).preemptions.empty());
  // Runs within the quota (the two oldest) are never taken.
  in.queued = {job("bob", "bob", 8, 9 * kMin)};
  d = decide(in, o);
  CHECK(d.preemptions.empty());
}

TEST_CASE("preemption stops no more BEST_EFFORT GPUs than the CRITICAL run needs", "[sched]") {
  // The newest BEST_EFFORT run holds 4 GPUs; two older ones hold 1 each. A CRITICAL run needs 2.
  Input in = box(8, 10 * kMin);
  in.running = {run("n1", "x", 2, 0), run("old1", "x", 1, 1 * kMin, "", PriorityClass::kBestEffort),
                run("old2", "x", 1, 2 * kMin, "", PriorityClass::kBestEffort),
                run("big", "x", 4, 3 * kMin, "", PriorityClass::kBestEffort)};
  in.queued = {job("crit", "y", 2, 9 * kMin, "", PriorityClass::kCritical)};
  Decisions d = decide(in);
  std::vector<std::string> victims;
  for (const auto& p : d.preemptions) victims.push_back(p.victim);
  std::sort(victims.begin(), victims.end());
  CHECK(victims == V{"old1", "old2"});
  // Needing 4: the one 4-GPU run, not it and more.
  in.queued[0].gpus = 4;
  d = decide(in);
  REQUIRE(d.preemptions.size() == 1);
  CHECK(d.preemptions[0].victim == "big");
  // Needing 3 (with 0 free): 4 + nothing beats 1 + 1 + 4; a set that frees exactly 3 does not exist.
  in.queued[0].gpus = 3;
  d = decide(in);
  REQUIRE(d.preemptions.size() == 1);
  CHECK(d.preemptions[0].victim == "big");
}

TEST_CASE("submit: a run larger than its quota, or past its queued-runs quota, is refused with the numbers",
          "[sched][quota]") {
  std::vector<Quota> q = {{Quota::Kind::kGroup, "ml-research", kAllPools, 4, -1},
                          {Quota::Kind::kUser, "alice", "default", -1, 2}};
  QuotaKey alice{"alice", "ml-research", "default"};
  auto none = [](const Quota&) { return 0; };
  CHECK(check_submit(q, alice, 4, none) == "");
  CHECK(check_submit(q, alice, 8, none) ==
        "the run needs 8 GPUs, but the quota of group ml-research allows 4 at once");
  CHECK(check_submit(q, alice, 1, [](const Quota&) { return 2; }) ==
        "the quota of user alice in pool 'default' allows 2 queued runs, and 2 are waiting");
  CHECK(check_submit(q, {"bob", "", "default"}, 64, none) == "");
  CHECK(check_submit(q, {"alice", "ml-research", "training"}, 1, [](const Quota&) { return 9; }) == "");
}

TEST_CASE("estimates: from history where there is one, the bound kept as a bound", "[sched][estimate]") {
  CHECK(estimate_runtime({20000, 18000, 60000}, {}, 3600000).ms == 20000);
  CHECK(estimate_runtime({20000, 18000, 60000}, {}, 3600000).basis == "workload");
  CHECK(estimate_runtime({}, {1000, 2000}, 0).samples == 0);  // two of the owner's runs: too few
  auto owner = estimate_runtime({}, {1000, 2000, 3000, 4000}, 0);
  CHECK((owner.ms == 2500 && owner.basis == "owner" && owner.samples == 4));
  CHECK(estimate_runtime({7200000}, {}, 3600000).ms == 3600000);  // never past the bound

  // 8 GPUs busy with runs that usually take 20 s but have no timeout (bound: 60 min).
  Input in = box(8, 5000);
  for (int k = 0; k < 8; ++k) {
    in.running.push_back(run("r" + std::to_string(k), "a", 1, 0));
    in.running.back().runtime_bound_ms = 0;
    in.running.back().expected_ms = 20000;
  }
  in.queued = {job("q", "b", 1, 1000)};
  in.queued[0].runtime_bound_ms = 0;
  Decisions d = decide(in);
  const Waiting& w = waiting(d, "q");
  CHECK(*w.estimated_start_ms == 20000);
  CHECK(*w.bound_start_ms == 60 * kMin);
  CHECK(describe(w, in.now_ms) ==
        "queued: position 1 of 1, waiting for 1 GPU, reserved: 0 of 1 held, estimated start in < 1 min "
        "(from earlier runtimes; in ~1 h if all use their full bound)");
  // Only some runs ahead have history: said so.
  Input mixed = box(8, 0);
  for (int k = 0; k < 8; ++k) {
    mixed.running.push_back(run("m" + std::to_string(k), "a", 1, 0));
    mixed.running.back().runtime_bound_ms = k < 4 ? 60 * kMin : 30 * kMin;
    mixed.running.back().expected_ms = k < 4 ? 20000 : 0;
  }
  mixed.queued = {job("five", "b", 5, 0)};
  CHECK(describe(waiting(decide(mixed), "five"), 0) ==
        "queued: position 1 of 1, waiting for 5 GPUs, reserved: 0 of 5 held, estimated start in ~30 min (4 of 5 runs "
        "ahead from earlier runtimes, the others by their bound; in ~1 h if all use their full bound)");
  // A run past its usual time is assumed to run to its bound.
  in.now_ms = 30000;
  CHECK(*waiting(decide(in), "q").estimated_start_ms == 60 * kMin);
}
