// HealthBook: heartbeats in, alerts and stalled nodes out (see server/health/run_health.h).
#include "server/health/run_health.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace air::health {

void HealthBook::heartbeat(const std::string& run_id, int attempt, int node, const api::NodeStatusReport& r,
                           int64_t now_ms) {
  Attempt& a = attempts_[{run_id, attempt}];
  Node& n = a.nodes[node];
  n.gpu_count = r.gpu_count;
  if (r.gpu_count > 0 && r.gpu_idle_ms) n.gpu_busy_ms = std::max(n.gpu_busy_ms, now_ms - std::max<int64_t>(0, *r.gpu_idle_ms));
  if (r.step) a.steps.observe(node, *r.step, now_ms);
}

namespace {

// The run's active alert of this kind for this node, or null.
api::RunAlert* active_alert(api::RunInfo& info, int attempt, int node, const std::string& kind) {
  for (auto& x : info.alerts)
    if (x.active && x.attempt == attempt && x.node == node && x.kind == kind) return &x;
  return nullptr;
}

void keep_few(std::vector<api::RunAlert>& alerts) {
  while (alerts.size() > kMaxRunAlerts) {
    auto it = std::find_if(alerts.begin(), alerts.end(), [](const api::RunAlert& x) { return !x.active; });
    alerts.erase(it == alerts.end() ? alerts.begin() : it);
  }
}

// Raises (or refreshes the text of) an alert; clears it when `message` is empty. True when something changed.
bool set_alert(api::RunInfo& info, int attempt, int node, const std::string& kind, const std::string& message,
               int64_t now_ms) {
  api::RunAlert* x = active_alert(info, attempt, node, kind);
  if (message.empty()) {
    if (!x) return false;
    x->active = false;
    if (info.status_message == x->message) info.status_message = "running; node " + std::to_string(node) + " made progress again";
    return true;
  }
  if (x) {
    // The quiet time or lag grows: the latest words, not a new alert (and not worth a save of its own).
    if (info.status_message == x->message) info.status_message = message;
    x->message = message;
    return false;
  }
  info.alerts.push_back({attempt, node, kind, message, now_ms, true});
  keep_few(info.alerts);
  info.status_message = message;
  return true;
}

}  // namespace

void HealthBook::forget(api::RunInfo& info, int attempt) {
  attempts_.erase({info.run_id, attempt});
  for (auto& x : info.alerts)
    if (x.attempt == attempt) x.active = false;
}

WatchResult HealthBook::watch(api::RunInfo& info, const api::AttemptInfo& a, const std::vector<int64_t>& last_output_ms,
                              int64_t now_ms, int64_t minute_ms) {
  WatchResult out;
  Attempt& book = attempts_[{info.run_id, a.number}];
  // Attempts of this run before this one are over.
  for (auto it = attempts_.lower_bound({info.run_id, 0}); it != attempts_.end() && it->first.first == info.run_id;)
    it = it->first.second < a.number ? attempts_.erase(it) : std::next(it);
  const StallPolicy policy{info.stall_timeout_minutes, minute_ms};
  std::vector<int> running;
  for (const auto& n : a.nodes) {
    if (n.state != NodeState::kRunning) continue;
    running.push_back(n.rank);
    Node& node = book.nodes[n.rank];
    if (!node.watched_since_ms) node.watched_since_ms = now_ms;
    NodeActivity act{n.rank, node.watched_since_ms,
                     n.rank < static_cast<int>(last_output_ms.size()) ? last_output_ms[n.rank] : 0, node.gpu_count,
                     node.gpu_busy_ms};
    StallFinding f = judge_stall(act, policy, now_ms);
    // A stalled node keeps its alert's words (the reason of the attempt's end says the rest).
    if (!(f.verdict == Verdict::kStalled && active_alert(info, a.number, n.rank, "stall")))
      out.changed |= set_alert(info, a.number, n.rank, "stall", f.verdict == Verdict::kQuiet ? "" : f.message, now_ms);
    if (f.verdict == Verdict::kStalled && !out.stalled) out.stalled = f;
  }
  const double straggler = info.straggler_minutes.value_or(kDefaultStragglerMinutes);
  std::map<int, std::string> lagging;
  for (auto& s : find_stragglers(book.steps, running, straggler, minute_ms, now_ms)) lagging[s.rank] = s.message;
  for (int r : running) out.changed |= set_alert(info, a.number, r, "straggler", lagging.count(r) ? lagging[r] : "", now_ms);
  return out;
}

bool only_system_metrics(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) return false;
  auto it = j.find("metrics");
  if (it == j.end() || !it->is_array() || it->empty()) return false;
  if (j.contains("params") && !j["params"].empty()) return false;
  for (const auto& m : *it)
    if (!m.is_object() || !m.contains("key") || !m["key"].is_string() ||
        m["key"].get_ref<const std::string&>().rfind("system/", 0) != 0)
      return false;
  return true;
}

}  // namespace air::health
