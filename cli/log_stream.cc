// Log polling against GET .../logs and line rendering with fatal-pattern alerts.
#include "cli/log_stream.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <regex>

#include "cli/remote.h"
#include "core/wire/api.h"

namespace air::cli {

bool is_fatal_line(std::string_view text) {
  // The regex is slow; most lines contain none of these words and skip it (log throughput matters).
  static const std::string_view kWords[] = {"CUDA", "NCCL", "OutOfMemory", "Watchdog", "async error", "Killed",
                                            "signal", "Segmentation", "SIGSEGV", "core dumped", "illegal",
                                            "torch.distributed", "TCPStore", "Xid", "ERROR: Script",
                                            "command not found"};
  bool candidate = false;
  for (auto w : kWords)
    if (text.find(w) != std::string_view::npos) {
      candidate = true;
      break;
    }
  if (!candidate) return false;
  static const std::regex re(
      R"(CUDA out of memory|OutOfMemoryError|NCCL.*([Tt]imeout|timed out|WARN.*[Tt]imeout)|Watchdog caught collective)"
      R"(|Got async error event|\bKilled\b|signal (9|SIGKILL|SIGTERM)|Segmentation fault|SIGSEGV|core dumped)"
      R"(|CUDA error|illegal memory access|torch\.distributed\.[A-Za-z.]*Error|TCPStore.*(timeout|timed out))"
      R"(|Xid (48|63|64|79|94|95)|ERROR: Script failed with exit code [1-9]|command not found)",
      std::regex::optimize);
  return std::regex_search(text.begin(), text.end(), re);
}

LogPoll poll_log(Client& c, const std::string& run_id, int attempt, int node, std::optional<uint64_t> offset,
                 std::optional<uint64_t> tail, int wait_ms) {
  std::string path = fmt::format("{}/runs/{}/attempts/{}/nodes/{}/logs?max_bytes={}", api::kPrefix, run_id, attempt,
                                 node, 8 << 20);
  if (offset) path += fmt::format("&offset={}", *offset);
  else if (tail) path += fmt::format("&tail={}", *tail);
  if (wait_ms > 0) path += fmt::format("&wait_ms={}", wait_ms);
  auto r = c.request("GET", path, {}, {}, wait_ms + 30000);
  if (r.status != 200) c.throw_api_error(r);
  LogPoll p;
  p.data = std::move(r.body);
  p.offset = std::stoull("0" + r.header("x-air-log-offset"));
  p.size = std::stoull("0" + r.header("x-air-log-size"));
  p.done = r.header("x-air-log-done") == "1";
  return p;
}

namespace {

void print_line(std::ostream& out, std::string_view raw, int node, const PrintOptions& o) {
  api::LogLine l = api::parse_log_line(raw);
  if (o.since_ms && l.time_ms && l.time_ms < o.since_ms) return;
  bool fatal = is_fatal_line(l.text);
  if (o.json) {
    int64_t ts = l.time_ms ? l.time_ms : now_ms();
    if (fatal)
      out << nlohmann::json{{"type", "ALERT"}, {"ts", format_iso(ts)}, {"node", node}, {"line", l.text}}.dump(
                 -1, ' ', false, nlohmann::json::error_handler_t::replace)
          << "\n";
    out << nlohmann::json{{"type", "LOG"}, {"ts", format_iso(ts)}, {"node", node}, {"stream", std::string(1, l.stream)},
                          {"line", l.text}}
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
    return;
  }
  if (o.prefix_node) out << "[node " << node << "] ";
  if (o.timestamps) out << (l.time_ms ? format_iso(l.time_ms) : std::string(24, ' ')) << " ";
  if (fatal && o.color) out << "\033[1;31m" << l.text << "\033[0m\n";
  else out << l.text << "\n";
}

}  // namespace

size_t print_log_lines(std::ostream& out, std::string& partial, std::string_view data, int node,
                       const PrintOptions& o, bool flush_partial) {
  size_t n = 0;
  size_t start = 0;
  while (start < data.size()) {
    auto nl = data.find('\n', start);
    if (nl == std::string_view::npos) {
      partial.append(data.substr(start));
      break;
    }
    if (partial.empty()) {
      print_line(out, data.substr(start, nl - start), node, o);
    } else {
      partial.append(data.substr(start, nl - start));
      print_line(out, partial, node, o);
      partial.clear();
    }
    ++n;
    start = nl + 1;
  }
  if (flush_partial && !partial.empty()) {
    print_line(out, partial, node, o);
    partial.clear();
    ++n;
  }
  return n;
}

}  // namespace air::cli
