// Turns a command's raw stdout/stderr bytes into log lines `<unix_ms> <o|e> <text>\n` (the agent contract):
// complete lines only, a partial last line flushed at exit, lines over 64 KiB split.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace air::launcher {

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

}  // namespace air::launcher
