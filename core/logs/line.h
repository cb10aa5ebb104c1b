// The log line, one home: how a stored line reads ("<unix_ms> <o|e> <text>", written by core/logs/framing.h),
// and which lines are errors or the failures that end a training job. `air logs`, the workspace's log search
// and the run page (web/patterns.js, checked against these tables by tests/core/logs/line_test.cc) all
// classify with the same tables.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace air::logs {

// One stored line. Lines that do not follow the format (a partial last line, text from an older agent)
// parse with time 0 and stream 'o', text = the whole line.
struct LogLine {
  int64_t time_ms = 0;
  char stream = 'o';
  std::string text;
};
LogLine parse_log_line(std::string_view line);
// The text of a stored line without copying it (the whole line when it has another shape).
std::string_view line_text(std::string_view line);

enum class LineClass { kPlain, kError, kFatal };

// Case-insensitive (ASCII). Fatal: a pattern all of whose words occur in the line (CUDA out of memory, an
// NCCL or TCPStore timeout, a segfault, an OOM kill, a failing GPU's Xid, ...). Error: any error word.
LineClass classify_line(std::string_view text);

// The tables, for the page's copy and its test: each fatal pattern is a list of lower-case words that must
// all occur; each error word on its own makes an error line.
std::span<const std::vector<std::string_view>> fatal_patterns();
std::span<const std::string_view> error_words();

}  // namespace air::logs
