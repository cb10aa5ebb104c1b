// A node's CPU, memory, disk and network figures from /proc and statvfs(), as MLflow names them
// (system/cpu_utilization_percentage, ...). Parsers are pure functions over the files' text, so tests feed
// them recorded files; SystemReader reads them from a root folder ("/proc" unless a test says otherwise).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace air::health {

// The aggregate "cpu" line of /proc/stat, in clock ticks.
struct CpuTimes {
  uint64_t busy = 0, total = 0;  // busy: total minus idle and iowait
};
std::optional<CpuTimes> parse_proc_stat(std::string_view text);
// Busy share of the time between two readings, 0..100; 0 when no time passed.
double cpu_utilization_percent(const CpuTimes& before, const CpuTimes& after);

// /proc/meminfo: MemTotal and MemAvailable (kB). Used = total - available (as MLflow's psutil counts it).
struct MemInfo {
  uint64_t total_kb = 0, available_kb = 0;
};
std::optional<MemInfo> parse_meminfo(std::string_view text);

// /proc/net/dev: bytes received and sent by every interface but loopback.
struct NetBytes {
  uint64_t rx = 0, tx = 0;
};
std::optional<NetBytes> parse_net_dev(std::string_view text);

// statvfs() figures of one file system, and the share in use as df counts it (used / (used + available to
// a user)), 0..100.
struct DiskBlocks {
  uint64_t blocks = 0, free = 0, available = 0;  // in fragment-size units
};
double disk_usage_percent(const DiskBlocks& d);
std::optional<DiskBlocks> stat_disk(const std::string& path);

// One sample's name -> value pairs, MLflow's names without the "system/" prefix.
using Sample = std::vector<std::pair<std::string, double>>;

// Reads /proc/stat, /proc/meminfo and /proc/net/dev under `proc_root` and statvfs(disk_path). CPU share and
// network totals are relative to the previous (for the network: the first) reading, as MLflow's monitor
// reports them; the first sample has no CPU figure. A file that cannot be read or parsed leaves its
// metrics out of that sample (never an error).
class SystemReader {
 public:
  explicit SystemReader(std::string proc_root = "/proc", std::string disk_path = "/");
  Sample sample();

 private:
  std::string proc_root_, disk_path_;
  std::optional<CpuTimes> last_cpu_;
  std::optional<NetBytes> first_net_;
  std::string buf_;  // reused between samples
};

}  // namespace air::health
