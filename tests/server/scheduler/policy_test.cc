// The scheduling policy, one rule per case: FCFS by submit time (a retry keeps its place), whole gangs,
// pools, priority classes, EASY backfill against the head's reservation, CRITICAL preempting BEST_EFFORT,
// positions and estimates, the two comparison policies, and a 1-GPU stream that never delays a gang.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "server/scheduler/policy.h"

using namespace air::server::sched;

namespace {

constexpr int64_t kMin = 60000;

QueuedJob queued(std::string id, int gpus, int64_t submitted, int64_t bound_min = 0,
                 PriorityClass p = PriorityClass::kNormal, std::string pool = "default") {
  QueuedJob j;
  j.id = std::move(id);
  j.gpus = gpus;
  j.submitted_ms = submitted;
  j.runtime_bound_ms = bound_min * kMin;
  j.priority = p;
  j.pool = std::move(pool);
  return j;
}

RunningJob running(std::string id, int gpus, int64_t started, int64_t bound_min,
                   PriorityClass p = PriorityClass::kNormal, std::string pool = "default") {
  RunningJob r;
  r.id = std::move(id);
  r.gpus = gpus;
  r.started_ms = started;
  r.runtime_bound_ms = bound_min * kMin;
  r.priority = p;
  r.pool = std::move(pool);
  return r;
}

Input box(int gpus, int64_t now = 0) {
  Input in;
  in.now_ms = now;
  in.pools = {{"default", gpus}};
  return in;
}

std::vector<std::string> started(const Decisions& d) {
  std::vector<std::string> out;
  for (const auto& s : d.starts) out.push_back(s.id + (s.backfill ? "*" : ""));
  return out;
}

const Waiting& waiting(const Decisions& d, const std::string& id) {
  for (const auto& w : d.waiting)
    if (w.id == id) return w;
  FAIL("no waiting entry for " << id);
  throw 0;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("scheduler: runs start in submit order, not id order, a retry keeps its place", "[sched]") {
  Input in = box(4);
  in.queued = {queued("aaaa", 2, 300), queued("bbbb", 2, 100), queued("cccc", 2, 200)};
  CHECK(started(decide(in)) == V{"bbbb", "cccc"});
  // A retried run is queued again with its run's submit time: it goes before later submissions.
  in.queued.push_back(queued("retry", 2, 50));
  in.queued.back().seq = 99;
  CHECK(started(decide(in)) == V{"retry", "bbbb"});
  // Within one millisecond the submission sequence decides.
  Input tie = box(2);
  tie.queued = {queued("zz", 2, 100), queued("aa", 2, 100)};
  tie.queued[0].seq = 1;
  tie.queued[1].seq = 2;
  CHECK(started(decide(tie)) == V{"zz"});
}

TEST_CASE("scheduler: a gang starts whole or not at all", "[sched]") {
  Input in = box(8);
  in.running = {running("r", 6, 0, 30)};
  in.queued = {queued("gang", 4, 10)};
  Decisions d = decide(in);
  CHECK(d.starts.empty());
  CHECK(waiting(d, "gang").reserved_held == 2);
  CHECK(*waiting(d, "gang").estimated_start_ms == 30 * kMin);
}

TEST_CASE("scheduler: priority classes order a pool's queue, pools are independent", "[sched]") {
  struct Case {
    PriorityClass a, b;
    std::string first;
  };
  auto [a, b, first] = GENERATE(Case{PriorityClass::kNormal, PriorityClass::kCritical, "b"},
                                Case{PriorityClass::kBestEffort, PriorityClass::kNormal, "b"},
                                Case{PriorityClass::kNormal, PriorityClass::kNormal, "a"},
                                Case{PriorityClass::kCritical, PriorityClass::kBestEffort, "a"});
  Input in = box(1);
  in.queued = {queued("a", 1, 1, 0, a), queued("b", 1, 2, 0, b)};
  CHECK(started(decide(in)) == V{first});

  Input two;
  two.pools = {{"big", 8}, {"small", 2}};
  two.running = {running("r", 8, 0, 30, PriorityClass::kNormal, "big")};
  two.queued = {queued("x", 4, 1, 0, PriorityClass::kCritical, "big"),
                queued("y", 2, 2, 0, PriorityClass::kBestEffort, "small")};
  Decisions d = decide(two, Options{.preemption = false});
  CHECK(started(d) == V{"y"});
  CHECK(waiting(d, "x").position == 1);
  CHECK(waiting(d, "x").queue_length == 1);
}

TEST_CASE("scheduler: EASY backfill: later runs fill gaps that cannot delay the head's reserved start", "[sched]") {
  // 8 GPUs: a 4-GPU run ends by minute 30; the head needs 8, so it is reserved for minute 30.
  Input in = box(8);
  in.running = {running("r", 4, 0, 30)};
  struct Case {
    int gpus;
    int64_t bound_min;  // 0: the default (60 min)
    bool backfilled;
  };
  auto c = GENERATE(Case{2, 10, true},    // ends by minute 10 < 30
                    Case{4, 30, true},    // ends exactly at the shadow time
                    Case{2, 31, false},   // would still hold 2 GPUs the head needs at minute 30
                    Case{2, 0, false},    // no timeout: the default bound of 60 min
                    Case{6, 10, false});  // does not fit the 4 free GPUs
  in.queued = {queued("head", 8, 1), queued("small", c.gpus, 2, c.bound_min)};
  Decisions d = decide(in);
  CHECK(started(d) == (c.backfilled ? V{"small*"} : V{}));
  CHECK(waiting(d, "head").head);
  CHECK(*waiting(d, "head").estimated_start_ms == 30 * kMin);

  // GPUs the head will not need at its shadow time may be used by runs of any length.
  Input extra = box(8);
  extra.running = {running("r", 6, 0, 30)};
  extra.queued = {queued("head", 4, 1), queued("long", 2, 2, 600), queued("long2", 2, 3, 600)};
  Decisions e = decide(extra);
  CHECK(started(e) == V{"long*"});  // then the spare is gone: long2 would take the head's GPUs
  CHECK(waiting(e, "long2").position == 2);
}

TEST_CASE("scheduler: plain FIFO never passes the head, first-fit takes id order and starves gangs", "[sched]") {
  Input in = box(8);
  in.running = {running("r", 4, 0, 30)};
  in.queued = {queued("b-head", 8, 1), queued("a-small", 2, 2, 10)};
  CHECK(started(decide(in, Options{.policy = Policy::kFifo})) == V{});
  CHECK(started(decide(in, Options{.policy = Policy::kFirstFit})) == V{"a-small"});
  in.queued.push_back(queued("c-small", 2, 3, 600));
  CHECK(started(decide(in, Options{.policy = Policy::kFirstFit})) == V{"a-small", "c-small"});
  CHECK(started(decide(in)) == V{"a-small*"});
}

TEST_CASE("scheduler: a run larger than its pool never blocks the queue, CPU runs always start", "[sched]") {
  Input in = box(4);
  in.queued = {queued("huge", 16, 1), queued("ok", 4, 2), queued("cpu", 0, 3)};
  Decisions d = decide(in);
  CHECK(started(d) == V{"ok", "cpu"});
  CHECK_FALSE(waiting(d, "huge").estimated_start_ms);
  CHECK(describe(waiting(d, "huge"), 0) == "cannot start: needs 16 GPUs, pool 'default' has 4");
  Input gone = box(4);
  gone.queued = {queued("x", 1, 1, 0, PriorityClass::kNormal, "retired")};
  CHECK(describe(decide(gone).waiting.at(0), 0) == "cannot start: pool 'retired' is not configured on this workspace");
}

TEST_CASE("scheduler: CRITICAL preempts the fewest, newest BEST_EFFORT runs of its pool", "[sched]") {
  Input in = box(8, 100 * kMin);
  in.running = {running("be-old", 2, 10 * kMin, 600, PriorityClass::kBestEffort),
                running("be-new", 2, 50 * kMin, 600, PriorityClass::kBestEffort),
                running("normal", 4, 0, 600, PriorityClass::kNormal)};
  in.queued = {queued("crit", 2, 99 * kMin, 0, PriorityClass::kCritical)};
  Decisions d = decide(in);
  REQUIRE(d.preemptions.size() == 1);
  CHECK(d.preemptions[0].victim == "be-new");
  CHECK(d.preemptions[0].for_job == "crit");
  const Waiting& w = waiting(d, "crit");
  CHECK(w.preempting);
  CHECK(*w.estimated_start_ms == 100 * kMin + 10000);  // within the stop grace
  CHECK(describe(w, in.now_ms) ==
        "queued: position 1 of 1, waiting for 2 GPUs, reserved: 0 of 2 held, stopping BEST_EFFORT runs for it, "
        "estimated start in < 1 min");

  // While the victim stops, nothing more is preempted; the GPUs it gives back go to the CRITICAL run.
  in.running[1].stopping = true;
  d = decide(in);
  CHECK(d.preemptions.empty());
  CHECK(waiting(d, "crit").preempting);

  // Needing more than all BEST_EFFORT runs hold: nothing is stopped for nothing.
  in.running[1].stopping = false;
  in.queued = {queued("crit", 6, 99 * kMin, 0, PriorityClass::kCritical)};
  CHECK(decide(in).preemptions.empty());
  // A NORMAL head never preempts; nor does a CRITICAL one with preemption off.
  in.queued = {queued("n", 2, 1)};
  CHECK(decide(in).preemptions.empty());
  in.queued = {queued("crit", 2, 99 * kMin, 0, PriorityClass::kCritical)};
  CHECK(decide(in, Options{.preemption = false}).preemptions.empty());
}

TEST_CASE("scheduler: positions and estimates for every waiting run", "[sched]") {
  Input in = box(8, 0);
  in.running = {running("a", 4, 0, 10), running("b", 4, 0, 20)};
  in.queued = {queued("q1", 8, 1, 30), queued("q2", 4, 2, 5), queued("q3", 2, 3, 5)};
  Decisions d = decide(in);
  CHECK(d.starts.empty());  // nothing free
  CHECK(waiting(d, "q1").position == 1);
  CHECK(waiting(d, "q1").queue_length == 3);
  CHECK(*waiting(d, "q1").estimated_start_ms == 20 * kMin);
  CHECK(*waiting(d, "q2").estimated_start_ms == 50 * kMin);  // after q1's 30 minutes
  CHECK(*waiting(d, "q3").estimated_start_ms == 50 * kMin);
  CHECK(describe(waiting(d, "q1"), 0) ==
        "queued: position 1 of 3, waiting for 8 GPUs, reserved: 0 of 8 held, estimated start in ~20 min");
  CHECK(describe(waiting(d, "q3"), 0) == "queued: position 3 of 3, waiting for 2 GPUs, estimated start in ~50 min");
  // A run already past its bound is expected to end at any moment.
  in.now_ms = 25 * kMin;
  in.running = {running("late", 8, 0, 20)};
  CHECK(*waiting(decide(in), "q1").estimated_start_ms == 25 * kMin);
}

TEST_CASE("scheduler: fair share: within a class the owner who used fewer GPUs goes first", "[sched]") {
  Input in = box(9, 10 * kMin);
  in.running = {running("r", 8, 0, 30)};  // alice: 8 GPUs for 10 minutes so far
  in.running[0].owner = "alice";
  in.queued = {queued("alice2", 1, 1), queued("bob1", 1, 2)};
  in.queued[0].owner = "alice";
  in.queued[1].owner = "bob";
  CHECK(started(decide(in)) == V{"alice2"});
  CHECK(started(decide(in, Options{.fair_share = true})) == V{"bob1"});
}

// The adversarial trace of issue 30 at the unit level: 8 GPUs busy with 1-GPU runs, an 8-GPU gang at
// the head, and a new 1-GPU run every 5 minutes. Runs end at random times within their bound; the gang
// must start no later than the reservation it got when it reached the head.
TEST_CASE("scheduler: a stream of 1-GPU runs behind an 8-GPU gang never delays the gang's reserved start", "[sched]") {
  uint64_t seed = GENERATE(1u, 2u, 3u, 4u, 5u);
  auto rnd = [&seed](int64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((seed >> 33) % static_cast<uint64_t>(n));
  };
  std::map<std::string, int64_t> ends;  // running run -> when it really ends
  Input in = box(8);
  for (int k = 0; k < 8; ++k) {
    in.running.push_back(running("w" + std::to_string(k), 1, 0, 25));
    ends["w" + std::to_string(k)] = 1 + rnd(25 * kMin);
  }
  in.queued.push_back(queued("gang", 8, 1, 30));
  std::optional<int64_t> reserved, gang_started;
  int next = 0;
  for (int64_t t = 0; t <= 180 * kMin && !gang_started; t += 15000) {
    in.now_ms = t;
    std::erase_if(in.running, [&](const RunningJob& r) { return ends[r.id] <= t; });
    if (t >= next * 5 * kMin) {
      std::string id = "s" + std::to_string(next++);
      in.queued.push_back(queued(id, 1, t + 1, 25));
    }
    Decisions d = decide(in);
    if (!reserved) reserved = waiting(d, "gang").estimated_start_ms;
    for (const auto& s : d.starts) {
      auto it = std::find_if(in.queued.begin(), in.queued.end(), [&](auto& q) { return q.id == s.id; });
      in.running.push_back(running(s.id, it->gpus, t, it->runtime_bound_ms / kMin));
      ends[s.id] = t + 1 + rnd(it->runtime_bound_ms);
      if (s.id == "gang") gang_started = t;
      in.queued.erase(it);
    }
  }
  REQUIRE(reserved);
  REQUIRE(gang_started);
  CHECK(*gang_started <= *reserved + 15000);  // within one tick of the reservation, never later
  CHECK(*reserved <= 25 * kMin);              // and that is at most one maximum runtime away
}
