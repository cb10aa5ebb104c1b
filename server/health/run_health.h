// What the workspace keeps to judge stalls and stragglers (core/health/stall.h has the rules): per node of
// a running attempt, its GPU readings and step from the heartbeats; per run, its alerts. The workspace
// calls heartbeat() from node_status() and watch() from its stall watchdog, both under its own lock.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/health/stall.h"
#include "core/wire/api.h"

namespace air::health {

struct WatchResult {
  bool changed = false;                  // info.alerts or info.status_message changed: save the run
  std::optional<StallFinding> stalled;   // a node to fail (its reason in message)
};

class HealthBook {
 public:
  // A heartbeat of a node: its GPU figures and last step (api::NodeStatusReport's gpu_count, gpu_idle_ms,
  // step), on the workspace's clock.
  void heartbeat(const std::string& run_id, int attempt, int node, const api::NodeStatusReport& r, int64_t now_ms);
  // Judges every RUNNING node of the attempt (last_output_ms[rank]: the node's last log line or metric, 0 for
  // none): raises and clears alerts in info.alerts (an alert also becomes the status message) and returns the
  // first stalled node. minute_ms: how long a minute lasts (e2e tests shorten it).
  WatchResult watch(api::RunInfo& info, const api::AttemptInfo& a, const std::vector<int64_t>& last_output_ms,
                    int64_t now_ms, int64_t minute_ms);
  // Forgets an attempt (it ended); its alerts stay on the run, no longer active.
  void forget(api::RunInfo& info, int attempt);

 private:
  struct Node {
    int64_t watched_since_ms = 0;
    int gpu_count = 0;
    int64_t gpu_busy_ms = 0;
  };
  struct Attempt {
    std::map<int, Node> nodes;
    StepClock steps;
  };
  std::map<std::pair<std::string, int>, Attempt> attempts_;
};

// The alerts kept on a run at most (the oldest inactive ones go first).
inline constexpr size_t kMaxRunAlerts = 50;

// True when a log-batch body holds metrics and every one is a system metric ("system/..."): an agent's
// sample, which is not a sign of the command's progress (the stall watchdog must not count it).
bool only_system_metrics(const std::string& log_batch_body);

}  // namespace air::health
