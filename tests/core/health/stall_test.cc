// The stall and straggler rules (core/health/stall.h): busy GPUs are progress, the default watchdog judges
// only nodes with GPU readings, an alert comes at half the timeout, a straggler is named with its lag.
#include <catch2/catch.hpp>

#include "core/health/stall.h"

using namespace air::health;

namespace {

constexpr int64_t kMin = 60000;

StallFinding at(const NodeActivity& n, std::optional<double> timeout, int64_t now) {
  return judge_stall(n, StallPolicy{timeout, kMin}, now);
}

}  // namespace

TEST_CASE("stall: a silent node with busy GPUs is not stalled, however long it is quiet", "[health][stall]") {
  NodeActivity n{1, 0, 1000, 8, 0};
  n.gpu_busy_ms = 59 * kMin;
  auto f = at(n, std::nullopt, 60 * kMin);  // 60 min without a line, GPUs busy a minute ago
  CHECK(f.verdict == Verdict::kQuiet);
  CHECK(f.quiet_ms == kMin);
}

TEST_CASE("stall: silent with idle GPUs is alerted at half the default timeout, then stalled", "[health][stall]") {
  NodeActivity n{1, 0, 0, 8, 0};
  CHECK(at(n, std::nullopt, 9 * kMin).verdict == Verdict::kQuiet);
  auto alert = at(n, std::nullopt, 10 * kMin);
  CHECK(alert.verdict == Verdict::kAlert);
  CHECK(alert.message ==
        "node 1: no output and GPUs idle for 10 min; the attempt ends if it stays so for 20 min "
        "(stall_timeout_minutes 20)");
  auto end = at(n, std::nullopt, 20 * kMin);
  CHECK(end.verdict == Verdict::kStalled);
  CHECK(end.message == "node 1 stalled: no log line or metric and GPUs idle for 20 min (stall_timeout_minutes 20)");
  // Output restarts the clock as busy GPUs do.
  n.last_output_ms = 15 * kMin;
  CHECK(at(n, std::nullopt, 20 * kMin).verdict == Verdict::kQuiet);
}

TEST_CASE("stall: off by default without GPU readings, on when set, off with 0", "[health][stall]") {
  NodeActivity cpu{0, 0, 0, 0, 0};
  CHECK(at(cpu, std::nullopt, 600 * kMin).verdict == Verdict::kQuiet);
  auto f = at(cpu, 0.05, 4000);  // 3 s timeout, as the fault_stall e2e sets it
  CHECK(f.verdict == Verdict::kStalled);
  CHECK(f.message == "node 0 stalled: no log line or metric for 4 s (stall_timeout_minutes 0.05)");
  NodeActivity gpu{0, 0, 0, 8, 0};
  CHECK(at(gpu, 0.0, 600 * kMin).verdict == Verdict::kQuiet);
  // Set explicitly, the GPUs still count: busy a second ago is not stalled.
  gpu.gpu_busy_ms = 3000;
  CHECK(at(gpu, 0.05, 4000).verdict == Verdict::kQuiet);
  // The watch starts when the watchdog first sees the node (a restarted workspace gives a full period).
  NodeActivity late{2, 50 * kMin, 0, 8, 0};
  CHECK(at(late, std::nullopt, 55 * kMin).verdict == Verdict::kQuiet);
}

TEST_CASE("durations read as seconds, minutes or hours", "[health][stall]") {
  CHECK(describe_duration(3060) == "3.06 s");
  CHECK(describe_duration(10 * kMin) == "10 min");
  CHECK(describe_duration(90 * kMin) == "90 min");
  CHECK(describe_duration(150 * kMin) == "2.5 h");
}

TEST_CASE("stragglers: the node whose step the leader passed longest ago, with its lag", "[health][straggler]") {
  StepClock c;
  c.observe(0, 1, 1000);
  c.observe(1, 1, 1000);
  for (int s = 2; s <= 30; ++s) c.observe(0, s, 1000 + s * 1000);  // node 0: one step a second
  for (int s = 2; s <= 10; ++s) c.observe(1, s, 1000 + s * 3000);  // node 1: one every 3 s
  // At 31 s: node 1 is at step 10, which node 0 passed at 12 s (when it reached 11).
  CHECK(c.lag_ms(1, 31000) == 19000);
  CHECK(c.lag_ms(0, 31000) == 0);
  CHECK(*c.leader() == 0);
  auto found = find_stragglers(c, {0, 1}, 0.25, kMin, 31000);  // 15 s
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 1);
  CHECK(found[0].message == "node 1 is a straggler: at step 10 while node 0 is at step 30 (behind by 19 s)");
  CHECK(find_stragglers(c, {0, 1}, 0.5, kMin, 31000).empty());  // 30 s: not yet
  CHECK(find_stragglers(c, {0, 1}, 0, kMin, 31000).empty());    // off
  // Caught up: no lag.
  c.observe(1, 30, 32000);
  CHECK(c.lag_ms(1, 40000) == 0);
  CHECK(find_stragglers(c, {0, 1}, 0.25, kMin, 40000).empty());
}

TEST_CASE("stragglers: a node with no step yet, or one node alone, is no straggler", "[health][straggler]") {
  StepClock c;
  CHECK(find_stragglers(c, {0, 1}, 1, kMin, 1000).empty());
  c.observe(0, 100, 1000);
  CHECK(find_stragglers(c, {0, 1}, 0.01, kMin, 100000).empty());
}

TEST_CASE("step lines: air-train's by default, any pattern's first group when set", "[health][straggler]") {
  StepPattern d;
  CHECK(*d.match("step 12/300 | loss 2.1 | lr 1e-4") == 12);
  // air-train's readable step line as trainer/metrics.cc prints it, the one line per step of its log.
  CHECK(*d.match("step 128/300 | loss 2.1043 | lr 2.000e-05 | grad_norm 1.927 | 227.4 ms | tok/s 36043 padded, 990 real"
                 " | MFU 28.5% | peak 26.1 GiB") == 128);
  CHECK(*d.match("  Step 7: loss 3") == 7);
  CHECK_FALSE(d.match("{\"step\":12,\"loss\":2.1}"));
  CHECK_FALSE(d.match("eval step 12 | eval_loss 2"));
  CHECK_FALSE(d.match("step x"));
  StepPattern p(R"(it=(\d+) )");
  CHECK(*p.match("epoch 0 it=41 loss=2") == 41);
  CHECK_FALSE(p.match("step 12/300"));
  CHECK_THROWS(StepPattern("(unclosed"));
}
