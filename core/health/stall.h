// Stalls and stragglers, judged from what the workspace knows of each node: when its log last grew, when
// its agent last saw its GPUs busy, and the step numbers in its log. Pure functions and one small
// bookkeeping class, so the rules are unit-tested without a workspace (tests/core/health/stall_test.cc).
// The rules (docs/workload.md, stall_timeout_minutes and straggler_minutes):
//  - A node is quiet from the later of its last output (log line, or a metric of its attempt), the last
//    moment its GPUs were busy, and when the watchdog began watching it. Busy GPUs are progress however
//    silent the node is (an eval, a checkpoint).
//  - stall_timeout_minutes T set: every running node is judged; 0 turns the watchdog off. Not set: nodes
//    whose agent reads GPUs are judged with T = kDefaultStallMinutes (a node without GPU readings cannot be
//    told apart from a busy one by output alone, so it is judged only when the workload asks).
//  - At T/2 quiet the node is alerted ("node 1: no output and GPUs idle for 10 min"); at T it is stalled
//    and its attempt ends (and is retried as any failure).
//  - A node whose last step is behind the leading node's, where the leader passed that step more than
//    straggler_minutes ago (default kDefaultStragglerMinutes; 0: off), is a straggler: alerted, not ended.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace air::health {

inline constexpr double kDefaultStallMinutes = 20;
inline constexpr double kDefaultStragglerMinutes = 5;

struct NodeActivity {
  int rank = 0;
  int64_t watched_since_ms = 0;  // when the watchdog first saw it running
  int64_t last_output_ms = 0;    // 0: none yet
  int gpu_count = 0;             // GPUs its agent reads (0: none, or no NVML)
  int64_t gpu_busy_ms = 0;       // the last time its GPUs were busy (0: never)
};

struct StallPolicy {
  std::optional<double> timeout_minutes;  // the workload's stall_timeout_minutes (0: off)
  int64_t minute_ms = 60000;
};

enum class Verdict { kQuiet, kAlert, kStalled };

struct StallFinding {
  Verdict verdict = Verdict::kQuiet;
  int rank = 0;
  int64_t quiet_ms = 0;
  std::string message;  // the alert, or the reason the attempt ends
};

// The stall verdict of one running node at `now`; kQuiet (with an empty message) when it is fine or not judged.
StallFinding judge_stall(const NodeActivity& n, const StallPolicy& p, int64_t now_ms);

// "12 s", "4.5 min", "2 h": how a quiet or lag time reads in an alert.
std::string describe_duration(int64_t ms);

// The step numbers each node's log reached, and when the leading step first went past each number; answers
// how long each node has been behind. Steps are observed on the workspace's clock (heartbeats).
class StepClock {
 public:
  void observe(int rank, int64_t step, int64_t now_ms);
  // How long ago the first node got past `rank`'s step (0: it is not behind, or has no step yet).
  int64_t lag_ms(int rank, int64_t now_ms) const;
  std::optional<int64_t> step(int rank) const;
  std::optional<int> leader() const;  // the node with the highest step (lowest rank on a tie)

 private:
  std::map<int, int64_t> steps_;         // rank -> last step seen
  std::map<int64_t, int64_t> passed_;    // s -> when the leading step first exceeded s (and every step
                                         // down to the previous entry's)
  int64_t max_step_ = -1;
};

struct StragglerFinding {
  int rank = 0;
  int64_t lag_ms = 0;
  std::string message;
};

// The nodes behind the leader by more than `minutes` (0 or less: none).
std::vector<StragglerFinding> find_stragglers(const StepClock& clock, const std::vector<int>& ranks, double minutes,
                                              int64_t minute_ms, int64_t now_ms);

// A step number from one line of a node's output: the first capture group of `pattern` where it matches,
// else air-train's "step N/M | ..." or a line starting "step N" / "Step N" (the default).
class StepPattern {
 public:
  explicit StepPattern(const std::string& pattern = {});  // throws std::regex_error on a bad pattern
  std::optional<int64_t> match(const std::string& line) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace air::health
