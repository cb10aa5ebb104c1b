// The node agent's system metrics: a thread that samples the node's GPUs (NVML, core/health/nvml.h), CPU,
// memory, disk and network (core/health/system_stats.h) every system_metrics_interval and logs them to the
// attempt's MLflow run under MLflow's own names, per node as MLflow's set_system_metrics_node_id does it:
// system/node_<rank>/gpu_0_utilization_percentage, system/node_<rank>/cpu_utilization_percentage, ...
// It also remembers when one of the node's GPUs was last busy, which the status thread reports with every
// heartbeat (the stall watchdog's second witness besides the log, core/health/stall.h). docs/agent.md.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/client/client.h"
#include "core/health/nvml.h"
#include "core/health/stall.h"
#include "core/health/system_stats.h"
#include "core/wire/api.h"

namespace air::launcher {

class AgentLog;

struct SystemMetricsOptions {
  int node = 0;
  std::string mlflow_run_id;  // "": sample (for the heartbeat) but log nothing
  // 0: no metrics are logged; the GPUs are still read every kWatchInterval for the stall watchdog.
  std::chrono::milliseconds interval{10000};
  std::string gpus;            // the node's CUDA_VISIBLE_DEVICES ("": every GPU of the machine)
  std::string proc_root = "/proc";
  std::string disk_path = "/";  // the file system whose use is reported (the node's working folder)
  double busy_percent = 10;     // a GPU at or above this utilisation is busy
};

inline constexpr std::chrono::milliseconds kWatchInterval{10000};

class SystemMetrics {
 public:
  // client: the node token's (POST /api/2.0/mlflow/runs/log-batch); may be null when nothing is logged.
  SystemMetrics(std::unique_ptr<Client> client, SystemMetricsOptions options, AgentLog* log);
  ~SystemMetrics();
  void start();
  void stop();
  // Sets gpu_count and gpu_idle_ms of a heartbeat.
  void fill(api::NodeStatusReport& report) const;
  // Takes one sample now: the MLflow metric names (with their prefix) and values, as logged. Also what
  // the loop calls; public for tests and bench/system_metrics.sh.
  std::vector<std::pair<std::string, double>> sample();
  // Logs one sample to the MLflow run; false when the workspace did not take it.
  bool post(const std::vector<std::pair<std::string, double>>& metrics, int64_t step);
  int gpu_count() const { return gpu_count_.load(); }

 private:
  void loop();
  std::unique_ptr<Client> client_;
  SystemMetricsOptions o_;
  AgentLog* log_;
  std::unique_ptr<health::Nvml> nvml_;
  bool nvml_tried_ = false;  // sample() loads NVML once (on the metrics thread)
  void load_nvml();
  health::SystemReader reader_;
  std::string prefix_;
  std::atomic<int> gpu_count_{0};
  std::atomic<int64_t> gpu_busy_at_ms_{0};  // steady clock, ms; 0: never busy
  int64_t started_ms_ = 0;                   // steady clock, ms
  bool post_failed_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The step number of the last step line in the command's output (core/health/stall.h's StepPattern over
// each framed line `<ms> <o|e> <text>`), for the straggler alert.
class StepWatcher {
 public:
  explicit StepWatcher(const std::string& pattern);  // throws air::Error on a bad pattern
  void feed(std::string_view framed);
  std::optional<int64_t> step() const;

 private:
  health::StepPattern pattern_;
  std::atomic<int64_t> step_{-1};
  std::string line_;
};

}  // namespace air::launcher
