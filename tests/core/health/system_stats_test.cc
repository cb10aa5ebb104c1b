// The /proc and statvfs readers on recorded files (tests/core/health/data), and on this machine.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/health/system_stats.h"

using namespace air::health;
namespace fs = std::filesystem;

namespace {

std::string data_dir() { return std::string(AIR_TEST_DATA_DIR) + "/core/health/data"; }

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::map<std::string, double> as_map(const Sample& s) { return {s.begin(), s.end()}; }

}  // namespace

TEST_CASE("/proc/stat: the aggregate cpu line, idle and iowait are not busy", "[health]") {
  auto a = parse_proc_stat(slurp(data_dir() + "/proc_a/stat"));
  auto b = parse_proc_stat(slurp(data_dir() + "/proc_b/stat"));
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->total == 1614141u + 593 + 248310 + 363581 + 4078 + 0 + 1801 + 2552);
  CHECK(a->busy == a->total - 363581 - 4078);
  CHECK(cpu_utilization_percent(*a, *b) == Approx(25.0));
  CHECK(cpu_utilization_percent(*a, *a) == 0.0);
  CHECK(cpu_utilization_percent(*b, *a) == 0.0);  // a counter that went back (never below zero)
  CHECK_FALSE(parse_proc_stat("intr 1 2\n"));
  CHECK_FALSE(parse_proc_stat("cpu  12 x 3 4\n"));
  CHECK_FALSE(parse_proc_stat(""));
}

TEST_CASE("/proc/meminfo: MemTotal and MemAvailable", "[health]") {
  auto m = parse_meminfo(slurp(data_dir() + "/proc_a/meminfo"));
  REQUIRE(m);
  CHECK(m->total_kb == 24683784u);
  CHECK(m->available_kb == 23429144u);
  CHECK_FALSE(parse_meminfo("MemTotal: 10 kB\n"));  // a kernel without MemAvailable (< 3.14)
  CHECK_FALSE(parse_meminfo("MemTotal: 10 kB\nMemAvailable: 20 kB\n"));
}

TEST_CASE("/proc/net/dev: every interface but loopback", "[health]") {
  auto n = parse_net_dev(slurp(data_dir() + "/proc_a/net/dev"));
  REQUIRE(n);
  CHECK(n->rx == 3000000000u);
  CHECK(n->tx == 3500000000u);
  auto lo_only = parse_net_dev("Inter-|\n face |\n    lo: 5 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n");
  REQUIRE(lo_only);
  CHECK(lo_only->rx == 0u);
  CHECK_FALSE(parse_net_dev("  eth0: 5 1 0 zz 0 0 0 0 7 1 0 0 0 0 0 0\n"));
}

TEST_CASE("statvfs: the share in use as df counts it, and the real root", "[health]") {
  // 1000 blocks, 400 free of which 300 a user may take: 600 used of 900.
  CHECK(disk_usage_percent({1000, 400, 300}) == Approx(100.0 * 600 / 900));
  CHECK(disk_usage_percent({0, 0, 0}) == 0.0);
  auto root = stat_disk("/");
  REQUIRE(root);
  double pct = disk_usage_percent(*root);
  CHECK(pct >= 0.0);
  CHECK(pct <= 100.0);
  CHECK_FALSE(stat_disk("/no/such/folder/at/all"));
}

TEST_CASE("SystemReader: MLflow's names, CPU from the second sample, network since the first", "[health]") {
  fs::path root = fs::temp_directory_path() / ("air_health_proc_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::copy(data_dir() + "/proc_a", root, fs::copy_options::recursive);
  SystemReader reader(root.string(), "/");
  auto first = as_map(reader.sample());
  CHECK_FALSE(first.count("cpu_utilization_percentage"));
  CHECK(first.at("system_memory_usage_megabytes") == Approx((24683784.0 - 23429144.0) * 1024 / 1e6));
  CHECK(first.at("network_receive_megabytes") == 0.0);
  CHECK(first.count("disk_usage_percentage"));
  fs::remove_all(root);
  fs::copy(data_dir() + "/proc_b", root, fs::copy_options::recursive);
  auto second = as_map(reader.sample());
  CHECK(second.at("cpu_utilization_percentage") == Approx(25.0));
  CHECK(second.at("system_memory_usage_megabytes") == Approx((24683784.0 - 12341892.0) * 1024 / 1e6));
  CHECK(second.at("system_memory_usage_percentage") == Approx(50.0).margin(0.01));
  CHECK(second.at("network_receive_megabytes") == Approx(250.0));   // eth0 only; lo's 3 GB left out
  CHECK(second.at("network_transmit_megabytes") == Approx(1000.0));  // ib0
  // A file gone leaves its metrics out, nothing else.
  fs::remove(root / "meminfo");
  auto third = as_map(reader.sample());
  CHECK_FALSE(third.count("system_memory_usage_megabytes"));
  CHECK(third.count("cpu_utilization_percentage"));
  fs::remove_all(root);
}

TEST_CASE("SystemReader on this machine's /proc", "[health]") {
  SystemReader reader;
  reader.sample();
  auto s = as_map(reader.sample());
  CHECK(s.count("cpu_utilization_percentage"));
  CHECK(s.at("system_memory_usage_megabytes") > 0.0);
  CHECK(s.count("network_receive_megabytes"));
}
