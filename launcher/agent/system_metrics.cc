// SystemMetrics and StepWatcher (see launcher/agent/system_metrics.h).
#include "launcher/agent/system_metrics.h"

#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/logs/framing.h"
#include "launcher/agent/node_agent.h"

namespace air::launcher {

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SystemMetrics::SystemMetrics(std::unique_ptr<Client> client, SystemMetricsOptions options, AgentLog* log)
    : client_(std::move(client)),
      o_(std::move(options)),
      log_(log),
      reader_(o_.proc_root, o_.disk_path),
      prefix_(fmt::format("system/node_{}/", o_.node)),
      started_ms_(steady_ms()) {}

// NVML is loaded by the first sample, on the metrics thread: looking for libnvidia-ml (dlopen walks some 60
// paths on a machine without it) is not on the way from the spec to the command.
void SystemMetrics::load_nvml() {
  if (nvml_tried_) return;
  nvml_tried_ = true;
  std::string why;
  nvml_ = health::Nvml::load({}, &why);
  if (log_) log_->info(nvml_ ? fmt::format("system metrics: NVML sees {} GPU(s)", nvml_->device_count())
                             : "system metrics: no GPU metrics (" + why + ")");
}

SystemMetrics::~SystemMetrics() { stop(); }

void SystemMetrics::start() { thread_ = std::thread([this] { loop(); }); }

void SystemMetrics::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SystemMetrics::fill(api::NodeStatusReport& report) const {
  report.gpu_count = gpu_count_.load();
  if (report.gpu_count == 0) return;
  int64_t busy = gpu_busy_at_ms_.load();
  // Never busy since the agent started: idle since then, as far as anyone can tell.
  report.gpu_idle_ms = std::max<int64_t>(0, steady_ms() - (busy ? busy : started_ms_));
}

std::vector<std::pair<std::string, double>> SystemMetrics::sample() {
  std::vector<std::pair<std::string, double>> out;
  load_nvml();
  if (nvml_) {
    auto indices = health::visible_gpu_indices(o_.gpus, nvml_->device_count());
    int read = 0, k = 0;
    bool busy = false;
    for (int index : indices) {
      // Named by the node's own numbering (cuda:k in the command), as CUDA_VISIBLE_DEVICES renumbers them.
      const int gpu = k++;
      auto g = nvml_->read(index);
      if (!g) continue;
      ++read;
      busy = busy || health::gpu_working(*g, o_.busy_percent);
      out.emplace_back(fmt::format("{}gpu_{}_utilization_percentage", prefix_, gpu), g->utilization_percent);
      out.emplace_back(fmt::format("{}gpu_{}_memory_usage_megabytes", prefix_, gpu), g->memory_used_megabytes);
      if (g->memory_total_megabytes > 0)
        out.emplace_back(fmt::format("{}gpu_{}_memory_usage_percentage", prefix_, gpu),
                         100.0 * g->memory_used_megabytes / g->memory_total_megabytes);
      if (g->power_watts) out.emplace_back(fmt::format("{}gpu_{}_power_usage_watts", prefix_, gpu), *g->power_watts);
    }
    gpu_count_.store(read);
    if (busy) gpu_busy_at_ms_.store(steady_ms());
  }
  for (auto& [name, value] : reader_.sample()) out.emplace_back(prefix_ + name, value);
  return out;
}

bool SystemMetrics::post(const std::vector<std::pair<std::string, double>>& metrics, int64_t step) {
  if (!client_ || o_.mlflow_run_id.empty() || metrics.empty()) return false;
  const int64_t now = logs::unix_time_ms();
  nlohmann::json batch = nlohmann::json::array();
  for (const auto& [k, v] : metrics) batch.push_back({{"key", k}, {"value", v}, {"timestamp", now}, {"step", step}});
  HttpResponse r = client_->send("POST", "/api/2.0/mlflow/runs/log-batch",
                                 nlohmann::json{{"run_id", o_.mlflow_run_id}, {"metrics", batch}}.dump(),
                                 "application/json", 10000);
  // Said once per run of failures: metrics are not worth filling agent.log for.
  if (!r.ok() && !post_failed_ && log_) log_->info("system metrics: the workspace did not take a sample (" + describe(r) + ")");
  post_failed_ = !r.ok();
  return r.ok();
}

void SystemMetrics::loop() {
  const bool logging = o_.interval.count() > 0 && !o_.mlflow_run_id.empty();
  const auto period = o_.interval.count() > 0 ? o_.interval : kWatchInterval;
  int64_t step = 0;
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    auto metrics = sample();
    if (logging) post(metrics, step++);
    lock.lock();
    cv_.wait_for(lock, period, [&] { return stop_; });
  }
}

StepWatcher::StepWatcher(const std::string& pattern) try : pattern_(pattern) {
} catch (const std::regex_error& e) {
  throw Error("step_pattern is not a valid regular expression: " + std::string(e.what()));
}

void StepWatcher::feed(std::string_view framed) {
  size_t start = 0;
  while (start < framed.size()) {
    size_t nl = framed.find('\n', start);
    std::string_view line = framed.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? framed.size() : nl + 1;
    // `<unix_ms> <o|e> <text>`: the text after the second space.
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp + 3 > line.size()) continue;
    line_.assign(line.substr(sp + 3));
    if (auto s = pattern_.match(line_)) step_.store(*s);
  }
}

std::optional<int64_t> StepWatcher::step() const {
  int64_t s = step_.load();
  return s < 0 ? std::nullopt : std::optional<int64_t>(s);
}

}  // namespace air::launcher
