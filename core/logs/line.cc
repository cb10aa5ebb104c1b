// Parsing and classifying stored log lines (core/logs/line.h).
#include "core/logs/line.h"

#include <algorithm>
#include <charconv>

namespace air::logs {

namespace {

// What ends a training job, as the logs of PyTorch, NCCL, CUDA, the kernel and Slurm say it.
const std::vector<std::vector<std::string_view>> kFatal = {
    {"out of memory"},  // CUDA's and the host's
    {"outofmemoryerror"},
    {"oom-kill"},
    {"oom killer"},
    {"nccl", "timeout"},
    {"nccl", "timed out"},
    {"watchdog caught collective"},
    {"got async error event"},
    {"tcpstore", "timeout"},
    {"tcpstore", "timed out"},
    {"torch.distributed", "error"},
    {"cuda error"},
    {"illegal memory access"},
    {"segmentation fault"},
    {"sigsegv"},
    {"core dumped"},
    {"sigkill"},
    {"signal 9"},
    {"signal sigterm"},
    {"killed"},
    // The NVIDIA driver's Xid codes of a failing GPU (double-bit ECC, row remapping, fallen off the bus,
    // uncontained ECC), as the kernel log writes them ("NVRM: Xid (PCI:0000:3b:00): 79, pid=...") and as
    // monitoring tools quote them ("Xid 79").
    {"fallen off the bus"},
    {"nvrm: xid", "): 48,"},
    {"nvrm: xid", "): 63,"},
    {"nvrm: xid", "): 64,"},
    {"nvrm: xid", "): 79,"},
    {"nvrm: xid", "): 94,"},
    {"nvrm: xid", "): 95,"},
    {"xid 48"},
    {"xid 63"},
    {"xid 64"},
    {"xid 79"},
    {"xid 94"},
    {"xid 95"},
    {"script failed with exit code"},
    {"command not found"},
};

const std::string_view kErrorWords[] = {"error",   "exception",     "traceback",          "fatal", "killed",
                                        "timed out", "timeout",     "out of memory", "segmentation fault", "abort"};

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

}  // namespace

LogLine parse_log_line(std::string_view line) {
  LogLine out;
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  auto sp = line.find(' ');
  int64_t t = 0;
  if (sp != std::string_view::npos && sp > 0 && sp + 2 <= line.size() &&
      (line[sp + 1] == 'o' || line[sp + 1] == 'e') && (sp + 2 == line.size() || line[sp + 2] == ' ')) {
    auto [p, ec] = std::from_chars(line.data(), line.data() + sp, t);
    if (ec == std::errc() && p == line.data() + sp) {
      out.time_ms = t;
      out.stream = line[sp + 1];
      out.text = sp + 3 <= line.size() ? std::string(line.substr(sp + 3)) : std::string();
      return out;
    }
  }
  out.text = std::string(line);
  return out;
}

std::string_view line_text(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  if (i == 0 || i + 2 >= line.size() || line[i] != ' ' || (line[i + 1] != 'o' && line[i + 1] != 'e') ||
      line[i + 2] != ' ')
    return line;
  return line.substr(i + 3);
}

LineClass classify_line(std::string_view text) {
  // One lower-case copy per line, then plain substring searches (memchr-fast): `air logs` classifies every
  // line it prints and the workspace's search every line of a 1,000,000-line log.
  thread_local std::string l;
  l.assign(text);
  std::transform(l.begin(), l.end(), l.begin(), [](char c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; });
  for (const auto& words : kFatal)
    if (std::all_of(words.begin(), words.end(), [&](std::string_view w) { return contains(l, w); }))
      return LineClass::kFatal;
  for (auto w : kErrorWords)
    if (contains(l, w)) return LineClass::kError;
  return LineClass::kPlain;
}

std::span<const std::vector<std::string_view>> fatal_patterns() { return kFatal; }
std::span<const std::string_view> error_words() { return kErrorWords; }

}  // namespace air::logs
