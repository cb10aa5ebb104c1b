// The system summary and alerts of `air get run` (see cli/system_summary.h).
#include "cli/runs/system_summary.h"

#include <fmt/format.h>

#include <regex>

#include "cli/format.h"

namespace air::cli {

namespace {

struct NodeFigures {
  std::map<int, double> util_last, mem_last;           // GPU index -> latest
  std::map<int, std::vector<double>> util_hist, mem_hist;  // GPU index -> history
  std::optional<double> cpu, memory, net_in, net_out;
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// "system/node_<rank>/<name>" -> rank and name; false for other keys.
bool split_key(const std::string& key, int& rank, std::string& name) {
  static const std::regex re(R"(^system/node_(\d+)/(.+)$)");
  std::smatch m;
  if (!std::regex_match(key, m, re)) return false;
  rank = std::stoi(m[1].str());
  name = m[2].str();
  return true;
}

}  // namespace

bool is_system_metric(const std::string& key) { return key.rfind("system/", 0) == 0; }

std::vector<std::string> summary_history_keys(const std::vector<api::Metric>& latest) {
  static const std::regex gpu(R"(^gpu_\d+_(utilization_percentage|memory_usage_megabytes)$)");
  std::vector<std::string> out;
  int rank;
  std::string name;
  for (const auto& m : latest)
    if (split_key(m.key, rank, name) && std::regex_match(name, gpu)) out.push_back(m.key);
  return out;
}

std::string system_summary(const std::vector<api::Metric>& latest, const MetricHistories& histories) {
  static const std::regex gpu(R"(^gpu_(\d+)_(utilization_percentage|memory_usage_megabytes)$)");
  std::map<int, NodeFigures> nodes;
  int rank;
  std::string name;
  for (const auto& m : latest) {
    if (!split_key(m.key, rank, name)) continue;
    NodeFigures& n = nodes[rank];
    std::smatch g;
    if (std::regex_match(name, g, gpu)) {
      int index = std::stoi(g[1].str());
      bool util = g[2].str() == "utilization_percentage";
      (util ? n.util_last : n.mem_last)[index] = m.value;
      if (auto h = histories.find(m.key); h != histories.end()) (util ? n.util_hist : n.mem_hist)[index] = h->second;
    } else if (name == "cpu_utilization_percentage") {
      n.cpu = m.value;
    } else if (name == "system_memory_usage_megabytes") {
      n.memory = m.value;
    } else if (name == "network_receive_megabytes") {
      n.net_in = m.value;
    } else if (name == "network_transmit_megabytes") {
      n.net_out = m.value;
    }
  }
  std::string out;
  for (const auto& [r, n] : nodes) {
    std::string line = fmt::format("    node {}", r);
    if (!n.util_last.empty()) {
      std::vector<double> last, all;
      for (const auto& [i, v] : n.util_last) last.push_back(v);
      for (const auto& [i, h] : n.util_hist) all.insert(all.end(), h.begin(), h.end());
      double mem_last = 0, mem_mean = 0;
      for (const auto& [i, v] : n.mem_last) mem_last += v;
      // Memory of the node: the sum over its GPUs, of the latest values and of each GPU's mean.
      for (const auto& [i, h] : n.mem_hist) mem_mean += mean(h);
      line += fmt::format("  GPU util {:.0f}% (mean {:.0f}%)  GPU memory {:.1f} GB (mean {:.1f} GB)  {} GPU(s)",
                          mean(last), all.empty() ? mean(last) : mean(all), mem_last / 1000,
                          (n.mem_hist.empty() ? mem_last : mem_mean) / 1000, n.util_last.size());
    } else {
      line += "  no GPU readings";
    }
    if (n.cpu) line += fmt::format("  CPU {:.0f}%", *n.cpu);
    if (n.memory) line += fmt::format("  memory {:.1f} GB", *n.memory / 1000);
    if (n.net_in && n.net_out) line += fmt::format("  network in {:.0f} MB, out {:.0f} MB", *n.net_in, *n.net_out);
    out += line + "\n";
  }
  return out;
}

std::string alert_lines(const api::RunInfo& r) {
  std::string out;
  for (const auto& a : r.alerts)
    out += fmt::format("    attempt {} node {} {} {}{}  {}\n", a.attempt, a.node, a.kind,
                       a.active ? "(active) " : "", format_time(a.at_ms), a.message);
  return out;
}

}  // namespace air::cli
