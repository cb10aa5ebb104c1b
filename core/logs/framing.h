// Turns a command's raw stdout/stderr bytes into log lines `<unix_ms> <o|e> <text>\n` (the agent contract;
// core/logs/line.h reads them): complete lines only, a partial last line flushed at exit, lines over 64 KiB
// split; RedactingFramer does the same after replacing secret values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/secrets/redact.h"

namespace air::logs {

inline constexpr size_t kMaxLogLineBytes = 64 * 1024;

class LineFramer {
 public:
  // stream: 'o' (stdout) or 'e' (stderr).
  explicit LineFramer(char stream, size_t max_line = kMaxLogLineBytes);
  // Appends every line completed by data to out; keeps the unfinished rest for the next call.
  void feed(std::string_view data, int64_t now_ms, std::string& out);
  // Emits the unfinished rest, if any, as a last line (the process has ended).
  void flush(int64_t now_ms, std::string& out);
  size_t pending() const { return partial_.size(); }

 private:
  void emit(std::string_view text, int64_t now_ms, std::string& out);
  char stream_;
  size_t max_line_;
  std::string partial_;
  std::string prefix_;
  int64_t prefix_ms_ = -1;
};

// Keeps the last lines seen (as framed lines) for the failure report, cheaply: only a bounded byte tail.
class LogTail {
 public:
  explicit LogTail(size_t max_bytes = 64 * 1024) : max_bytes_(max_bytes) {}
  void add(std::string_view framed);
  // The text of the last n lines, without timestamp and stream letter.
  std::vector<std::string> last_lines(size_t n) const;

 private:
  size_t max_bytes_;
  std::string tail_;
};

int64_t unix_time_ms();

// A LineFramer behind a Redactor: raw bytes are redacted first (so a value split across reads, or one that
// spans a newline, is still caught), then cut into log lines. Without secrets it is a plain LineFramer.
class RedactingFramer {
 public:
  RedactingFramer(char stream, const std::vector<std::string>& secret_values)
      : redactor_(secret_values), framer_(stream) {}
  void feed(std::string_view data, int64_t now_ms, std::string& out) {
    framer_.feed(redactor_.feed(data), now_ms, out);
  }
  void flush(int64_t now_ms, std::string& out) {
    framer_.feed(redactor_.finish(), now_ms, out);
    framer_.flush(now_ms, out);
  }

 private:
  Redactor redactor_;
  LineFramer framer_;
};

}  // namespace air::logs
