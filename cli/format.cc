// The CLI's formatters (format.h).
#include "cli/format.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "core/base/time.h"
#include "core/wire/run_state.h"

namespace air::cli {

int64_t now_ms() { return unix_now_ms(); }

std::string format_time(int64_t ms) { return ms <= 0 ? "-" : format_utc(ms, TimeFormat::kReadable); }

std::string format_iso(int64_t ms) { return format_utc(ms, TimeFormat::kIsoMillis); }

std::string format_duration(int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return fmt::format("{}ms", ms);
  int64_t s = ms / 1000, h = s / 3600, m = (s % 3600) / 60;
  s %= 60;
  if (h) return fmt::format("{}h {}m {}s", h, m, s);
  if (m) return fmt::format("{}m {}s", m, s);
  return fmt::format("{}.{}s", s, (ms % 1000) / 100);
}

int64_t run_duration_ms(const api::RunInfo& r, int64_t now) {
  if (!r.started_at_ms) return 0;
  return (r.ended_at_ms ? r.ended_at_ms : now) - r.started_at_ms;
}

bool is_run_terminal(const std::string& state) {
  auto s = run_state_from_string(state);
  return !s || is_terminal(*s);
}

std::string styled_state(const std::string& state, bool color) {
  if (!color) return state;
  const char* c = state == "SUCCEEDED" ? "32" : state == "RUNNING" ? "36" : state == "PENDING" ? "33" : "31";
  return fmt::format("\033[{}m● {}\033[0m", c, state);
}

bool stdout_is_tty() { return ::isatty(1) == 1; }

bool stderr_is_tty() { return ::isatty(2) == 1; }

bool use_color(const Context& ctx, int fd) {
  if (ctx.global.color == "always") return true;
  if (ctx.global.color == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  return ::isatty(fd) == 1;
}

}  // namespace air::cli
