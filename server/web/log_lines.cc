// Line index, range reads and search over node log files (server/web/log_lines.h).
#include "core/base/fd.h"
#include "server/web/log_lines.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/base/error.h"
#include "core/logs/line.h"

namespace air::server {

namespace {

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
  return o;
}

bool has(const std::string& hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

// Case-insensitive (ASCII) search for an already lower-case needle, without allocating: the search of a
// 1,000,000-line log is one pass over it.
bool contains_lower(std::string_view hay, std::string_view needle_lower) {
  auto lower_eq = [](char a, char b) { return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b; };
  return std::search(hay.begin(), hay.end(), needle_lower.begin(), needle_lower.end(), lower_eq) != hay.end();
}

}  // namespace

bool line_matches(std::string_view line, LineMatch kind, std::string_view needle_lower) {
  if (kind == LineMatch::kText) return !needle_lower.empty() && has(lower(line), needle_lower);
  logs::LineClass c = logs::classify_line(line);
  return kind == LineMatch::kFatal ? c == logs::LineClass::kFatal : c != logs::LineClass::kPlain;
}

void LogLineIndex::extend(File& f, const std::string& path, uint64_t size) {
  if (size <= f.scanned) return;
  UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return;
  std::vector<char> buf(1 << 20);
  while (f.scanned < size) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - f.scanned));
    ssize_t got = ::pread(in.get(), buf.data(), want, static_cast<off_t>(f.scanned));
    if (got <= 0) break;
    const char* p = buf.data();
    const char* end = p + got;
    while (const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)))) {
      f.starts.push_back(f.scanned + static_cast<uint64_t>(nl - buf.data()) + 1);
      p = nl + 1;
    }
    f.scanned += static_cast<uint64_t>(got);
  }
}

std::shared_ptr<LogLineIndex::File> LogLineIndex::file(const std::string& path, uint64_t size) {
  std::shared_ptr<File> f;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = std::find_if(lru_.begin(), lru_.end(), [&](const auto& e) { return e.first == path; });
    if (it != lru_.end()) {
      lru_.splice(lru_.begin(), lru_, it);
    } else {
      lru_.emplace_front(path, std::make_shared<File>());
      if (lru_.size() > max_files_) lru_.pop_back();
    }
    f = lru_.front().second;
  }
  std::lock_guard<std::mutex> g(f->mu);
  extend(*f, path, size);
  return f;
}

uint64_t LogLineIndex::total_lines(const std::string& path, uint64_t size) {
  auto f = file(path, size);
  std::lock_guard<std::mutex> g(f->mu);
  return f->starts.size() - 1;
}

LineRange LogLineIndex::read(const std::string& path, uint64_t size, uint64_t start, uint64_t count) {
  auto f = file(path, size);
  LineRange r;
  uint64_t from = 0, to = 0;
  {
    std::lock_guard<std::mutex> g(f->mu);
    r.total_lines = f->starts.size() - 1;
    r.start = std::min(start, r.total_lines);
    uint64_t end = std::min(r.total_lines, r.start + count);
    from = f->starts[r.start];
    to = f->starts[end];
  }
  if (to <= from) return r;
  std::string data(to - from, '\0');
  UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0 || ::pread(in.get(), data.data(), data.size(), static_cast<off_t>(from)) != static_cast<ssize_t>(data.size()))
    throw Error("cannot read log " + path);
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    r.lines.push_back(data.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return r;
}

int64_t LogLineIndex::find(const std::string& path, uint64_t size, uint64_t from, bool forward, LineMatch kind,
                           const std::string& needle) {
  const uint64_t kChunk = 20000;
  std::string n = lower(needle);
  uint64_t total = total_lines(path, size);
  if (total == 0) return -1;
  int64_t i = static_cast<int64_t>(std::min(from, total - 1));
  while (i >= 0 && static_cast<uint64_t>(i) < total) {
    uint64_t lo = forward ? static_cast<uint64_t>(i) : static_cast<uint64_t>(std::max<int64_t>(0, i - kChunk + 1));
    LineRange r = read(path, size, lo, forward ? kChunk : static_cast<uint64_t>(i) - lo + 1);
    if (r.lines.empty()) break;
    for (size_t k = 0; k < r.lines.size(); ++k) {
      size_t j = forward ? k : r.lines.size() - 1 - k;
      std::string_view text = logs::line_text(r.lines[j]);
      bool hit = kind == LineMatch::kText ? contains_lower(text, n) : line_matches(text, kind, n);
      if (hit) return static_cast<int64_t>(lo + j);
    }
    i = forward ? static_cast<int64_t>(lo + r.lines.size()) : static_cast<int64_t>(lo) - 1;
  }
  return -1;
}

}  // namespace air::server
