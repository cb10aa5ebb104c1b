// libFuzzer target: the agent's log line framing (launcher/log_shipper_framing). The input's first bytes
// choose the maximum line length and how the rest is cut into reads; the framed output must be whole
// `<ms> <o|e> <text>\n` lines, none longer than the maximum, whose texts give back the input exactly
// (joined by newlines), and LogTail must return only text that was framed.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/logs/line.h"
#include "core/wire/api.h"
#include "core/logs/framing.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const size_t max_line = 4 + data[0] % 64;
  const size_t step = 1 + data[1] % 37;
  const char stream = data[2] % 2 ? 'e' : 'o';
  std::string_view in(reinterpret_cast<const char*>(data + 3), size - 3);

  air::logs::LineFramer framer(stream, max_line);
  air::logs::LogTail tail(256);
  std::string out;
  int64_t now = 1700000000000;
  for (size_t at = 0; at < in.size(); at += step, ++now) {
    std::string chunk;
    framer.feed(in.substr(at, step), now, chunk);
    tail.add(chunk);
    out += chunk;
    FUZZ_CHECK(framer.pending() <= max_line, "the framer holds more than one line's worth");
  }
  std::string last;
  framer.flush(now, last);
  tail.add(last);
  out += last;

  // Every framed line parses back; the texts, joined, are the input. A line cut for length joins its
  // continuation without a newline, so rebuild by re-inserting '\n' only where the input has one.
  std::string rebuilt;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    FUZZ_CHECK(nl != std::string::npos, "framed output does not end with a newline");
    std::string_view line(out.data() + pos, nl - pos);
    auto parsed = air::logs::parse_log_line(line);
    FUZZ_CHECK(parsed.time_ms >= 1700000000000 && parsed.stream == stream, "a framed line has a bad prefix");
    FUZZ_CHECK(parsed.text.size() <= max_line, "a framed line is longer than the maximum");
    rebuilt += parsed.text;
    pos = nl + 1;
    if (rebuilt.size() < in.size() && in[rebuilt.size()] == '\n') rebuilt += '\n';
  }
  if (!in.empty() && in.back() == '\n' && !rebuilt.empty() && rebuilt.back() != '\n') rebuilt += '\n';
  FUZZ_CHECK(rebuilt == in, "the framed texts do not give back the input");
  for (const auto& l : tail.last_lines(5)) FUZZ_CHECK(l.size() <= max_line, "LogTail returned an overlong line");
  return 0;
}
