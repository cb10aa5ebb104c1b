// Log polling against GET .../logs and line rendering with fatal-pattern alerts.
#include "cli/runs/log_stream.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "core/logs/line.h"
#include "core/wire/api.h"

namespace air::cli {

LogPoll poll_log(Client& c, const std::string& run_id, int attempt, int node, std::optional<uint64_t> offset,
                 std::optional<uint64_t> tail, int wait_ms) {
  std::string path = api::node_path(run_id, attempt, node, "logs") + fmt::format("?max_bytes={}", 8 << 20);
  if (offset) path += fmt::format("&offset={}", *offset);
  else if (tail) path += fmt::format("&tail={}", *tail);
  if (wait_ms > 0) path += fmt::format("&wait_ms={}", wait_ms);
  auto r = c.request("GET", path, {}, {}, wait_ms + 30000);
  if (r.status != 200) c.throw_api_error(r);
  LogPoll p;
  p.data = std::move(r.body);
  p.offset = std::stoull("0" + r.header(api::header_key(api::kHeaderLogOffset)));
  p.size = std::stoull("0" + r.header(api::header_key(api::kHeaderLogSize)));
  p.done = r.header(api::header_key(api::kHeaderLogDone)) == "1";
  return p;
}

namespace {

void print_line(std::ostream& out, std::string_view raw, int node, const PrintOptions& o) {
  logs::LogLine l = logs::parse_log_line(raw);
  if (o.since_ms && l.time_ms && l.time_ms < o.since_ms) return;
  bool fatal = logs::classify_line(l.text) == logs::LineClass::kFatal;
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
