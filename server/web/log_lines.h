// Node logs by line number for the run page: a per-file index of line starts, extended as the file grows,
// so that any range of a 1,000,000-line log is read with one pread; plus search and the error patterns
// ("jump to first error", fatal lines such as out-of-memory or an NCCL timeout).
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace air::server {

struct LineRange {
  uint64_t start = 0;        // the first line returned
  uint64_t total_lines = 0;  // complete lines in the log when read (a partial last line is not counted)
  std::vector<std::string> lines;
};

// Which kind of line a search looks for.
enum class LineMatch { kText, kError, kFatal };

// kText: the line contains needle_lower (case-insensitive). kError: an error or fatal line, kFatal: a fatal
// one, as core/logs/line.h classifies it (the page marks lines with the same tables).
bool line_matches(std::string_view line, LineMatch kind, std::string_view needle_lower = {});

class LogLineIndex {
 public:
  explicit LogLineIndex(size_t max_files = 16) : max_files_(max_files) {}

  // Lines [start, start + count) of the file at `path` (whose current size is `size`).
  LineRange read(const std::string& path, uint64_t size, uint64_t start, uint64_t count);
  uint64_t total_lines(const std::string& path, uint64_t size);
  // The next (forward) or previous line at or after / at or before `from` that matches; -1 when none.
  // kText compares case-insensitively with `needle`.
  int64_t find(const std::string& path, uint64_t size, uint64_t from, bool forward, LineMatch kind,
               const std::string& needle);

 private:
  struct File {
    std::mutex mu;
    std::vector<uint64_t> starts{0};  // starts[i] = offset of line i; starts.back() = end of complete lines
    uint64_t scanned = 0;
  };
  std::shared_ptr<File> file(const std::string& path, uint64_t size);
  static void extend(File& f, const std::string& path, uint64_t size);

  size_t max_files_;
  std::mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<File>>> lru_;  // most recently used first
};

}  // namespace air::server
