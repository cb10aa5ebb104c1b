// /proc and statvfs readers for the node agent's system metrics (see core/health/system_stats.h).
#include "core/health/system_stats.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <charconv>

namespace air::health {

namespace {

// The next whitespace-separated word of `s` from `pos` (advanced past it); empty at the end.
std::string_view next_word(std::string_view s, size_t& pos) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
  size_t start = pos;
  while (pos < s.size() && s[pos] != ' ' && s[pos] != '\t' && s[pos] != '\n') ++pos;
  return s.substr(start, pos - start);
}

bool to_u64(std::string_view w, uint64_t& out) {
  if (w.empty()) return false;
  auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), out);
  return ec == std::errc() && p == w.data() + w.size();
}

// Calls f(line) for each line of text; stops when f returns false.
template <class F>
void each_line(std::string_view text, F f) {
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (!f(line)) return;
    if (nl == std::string_view::npos) return;
    start = nl + 1;
  }
}

// Reads a small file whole (files under /proc report size 0: read until EOF).
bool read_small_file(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return n == 0;
}

}  // namespace

std::optional<CpuTimes> parse_proc_stat(std::string_view text) {
  std::optional<CpuTimes> out;
  each_line(text, [&](std::string_view line) {
    size_t pos = 0;
    if (next_word(line, pos) != "cpu") return true;
    // user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
    uint64_t v[8] = {};
    int n = 0;
    for (; n < 8; ++n) {
      std::string_view w = next_word(line, pos);
      if (w.empty()) break;
      if (!to_u64(w, v[n])) return false;
    }
    if (n < 4) return false;
    CpuTimes t;
    for (int i = 0; i < n; ++i) t.total += v[i];
    t.busy = t.total - v[3] - (n > 4 ? v[4] : 0);
    out = t;
    return false;
  });
  return out;
}

double cpu_utilization_percent(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.busy < before.busy) return 0.0;
  double pct = 100.0 * static_cast<double>(after.busy - before.busy) / static_cast<double>(after.total - before.total);
  return pct > 100.0 ? 100.0 : pct;
}

std::optional<MemInfo> parse_meminfo(std::string_view text) {
  MemInfo m;
  bool total = false, available = false;
  each_line(text, [&](std::string_view line) {
    size_t pos = 0;
    std::string_view key = next_word(line, pos);
    uint64_t* dst = key == "MemTotal:" ? &m.total_kb : key == "MemAvailable:" ? &m.available_kb : nullptr;
    if (dst && to_u64(next_word(line, pos), *dst)) (key == "MemTotal:" ? total : available) = true;
    return !(total && available);
  });
  if (!total || !available || m.available_kb > m.total_kb) return std::nullopt;
  return m;
}

std::optional<NetBytes> parse_net_dev(std::string_view text) {
  NetBytes out;
  bool any = false, bad = false;
  each_line(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return true;  // the two header lines
    size_t pos = 0;
    std::string_view name = line.substr(0, colon);
    std::string_view iface = next_word(name, pos);
    if (iface.empty() || iface.find('|') != std::string_view::npos) return true;
    std::string_view rest = line.substr(colon + 1);
    pos = 0;
    uint64_t fields[9] = {};
    for (int i = 0; i < 9; ++i)
      if (!to_u64(next_word(rest, pos), fields[i])) {
        bad = true;
        return false;
      }
    if (iface == "lo") return true;
    out.rx += fields[0];
    out.tx += fields[8];
    any = true;
    return true;
  });
  if (bad) return std::nullopt;
  if (!any) return NetBytes{};  // only loopback: nothing moved over a network
  return out;
}

double disk_usage_percent(const DiskBlocks& d) {
  if (d.free > d.blocks) return 0.0;
  uint64_t used = d.blocks - d.free;
  uint64_t denom = used + d.available;
  return denom == 0 ? 0.0 : 100.0 * static_cast<double>(used) / static_cast<double>(denom);
}

std::optional<DiskBlocks> stat_disk(const std::string& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0) return std::nullopt;
  return DiskBlocks{static_cast<uint64_t>(s.f_blocks), static_cast<uint64_t>(s.f_bfree),
                    static_cast<uint64_t>(s.f_bavail)};
}

SystemReader::SystemReader(std::string proc_root, std::string disk_path)
    : proc_root_(std::move(proc_root)), disk_path_(std::move(disk_path)) {}

Sample SystemReader::sample() {
  Sample out;
  if (read_small_file(proc_root_ + "/stat", buf_))
    if (auto cpu = parse_proc_stat(buf_)) {
      if (last_cpu_) out.emplace_back("cpu_utilization_percentage", cpu_utilization_percent(*last_cpu_, *cpu));
      last_cpu_ = cpu;
    }
  if (read_small_file(proc_root_ + "/meminfo", buf_))
    if (auto mem = parse_meminfo(buf_)) {
      // Megabytes of 10^6 bytes, as MLflow's own monitor reports them.
      const double used_kb = static_cast<double>(mem->total_kb - mem->available_kb);
      out.emplace_back("system_memory_usage_megabytes", used_kb * 1024.0 / 1e6);
      out.emplace_back("system_memory_usage_percentage",
                       mem->total_kb ? 100.0 * used_kb / static_cast<double>(mem->total_kb) : 0.0);
    }
  if (auto disk = stat_disk(disk_path_)) out.emplace_back("disk_usage_percentage", disk_usage_percent(*disk));
  if (read_small_file(proc_root_ + "/net/dev", buf_))
    if (auto net = parse_net_dev(buf_)) {
      if (!first_net_) first_net_ = net;
      // Counters only grow, unless an interface went away: never report less than nothing.
      uint64_t rx = net->rx >= first_net_->rx ? net->rx - first_net_->rx : 0;
      uint64_t tx = net->tx >= first_net_->tx ? net->tx - first_net_->tx : 0;
      out.emplace_back("network_receive_megabytes", static_cast<double>(rx) / 1e6);
      out.emplace_back("network_transmit_megabytes", static_cast<double>(tx) / 1e6);
    }
  return out;
}

}  // namespace air::health
