// LineFramer and LogTail (see core/logs/framing.h).
#include "core/logs/framing.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace air::logs {

namespace {

// Moves a cut point back so that a long line is not split inside a UTF-8 sequence (at most 3 bytes back).
size_t utf8_safe_cut(std::string_view s, size_t cut) {
  size_t c = cut;
  for (int i = 0; i < 3 && c > 1 && (static_cast<unsigned char>(s[c]) & 0xC0) == 0x80; ++i) --c;
  return (static_cast<unsigned char>(s[c]) & 0xC0) == 0x80 ? cut : c;
}

}  // namespace

int64_t unix_time_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

LineFramer::LineFramer(char stream, size_t max_line) : stream_(stream), max_line_(max_line < 4 ? 4 : max_line) {}

void LineFramer::emit(std::string_view text, int64_t now_ms, std::string& out) {
  while (text.size() > max_line_) {
    size_t cut = utf8_safe_cut(text, max_line_);
    emit(text.substr(0, cut), now_ms, out);
    text.remove_prefix(cut);
  }
  // One read gives many lines with the same time: format the prefix once per time, not once per line.
  if (now_ms != prefix_ms_ || prefix_.empty()) {
    char buf[32];
    int n = std::snprintf(buf, sizeof buf, "%lld %c ", static_cast<long long>(now_ms), stream_);
    prefix_.assign(buf, static_cast<size_t>(n));
    prefix_ms_ = now_ms;
  }
  out.append(prefix_);
  out.append(text);
  out.push_back('\n');
}

void LineFramer::feed(std::string_view data, int64_t now_ms, std::string& out) {
  while (!data.empty()) {
    const void* nl = std::memchr(data.data(), '\n', data.size());
    if (!nl) {
      partial_.append(data);
      // A line that keeps growing is cut now rather than held in memory without bound: every full piece,
      // not just one per read (one cut per read let a read longer than the limit grow it; found by fuzzing).
      size_t done = 0;
      while (partial_.size() - done > max_line_) {
        std::string_view rest = std::string_view(partial_).substr(done);
        size_t cut = utf8_safe_cut(rest, max_line_);
        emit(rest.substr(0, cut), now_ms, out);
        done += cut;
      }
      partial_.erase(0, done);
      return;
    }
    size_t len = static_cast<const char*>(nl) - data.data();
    if (partial_.empty()) {
      emit(data.substr(0, len), now_ms, out);
    } else {
      partial_.append(data.substr(0, len));
      emit(partial_, now_ms, out);
      partial_.clear();
    }
    data.remove_prefix(len + 1);
  }
}

void LineFramer::flush(int64_t now_ms, std::string& out) {
  if (partial_.empty()) return;
  emit(partial_, now_ms, out);
  partial_.clear();
}

void LogTail::add(std::string_view framed) {
  if (framed.size() >= max_bytes_) {
    tail_.assign(framed.substr(framed.size() - max_bytes_));
    return;
  }
  size_t keep = max_bytes_ - framed.size();
  if (tail_.size() > keep) tail_.erase(0, tail_.size() - keep);
  tail_.append(framed);
}

std::vector<std::string> LogTail::last_lines(size_t n) const {
  std::vector<std::string> rev;
  std::string_view s(tail_);
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  while (!s.empty() && rev.size() < n) {
    size_t nl = s.rfind('\n');
    std::string_view line = nl == std::string_view::npos ? s : s.substr(nl + 1);
    if (nl == std::string_view::npos && tail_.size() >= max_bytes_) break;  // cut at the front: incomplete
    // Strip "<ms> <o|e> ".
    size_t sp = line.find(' ');
    if (sp != std::string_view::npos) line.remove_prefix(std::min(line.size(), sp + 3));
    rev.emplace_back(line);
    if (nl == std::string_view::npos) break;
    s = s.substr(0, nl);
  }
  return {rev.rbegin(), rev.rend()};
}

}  // namespace air::logs
