// Measurements, not checks (hidden from ctest; run `build/bin/launcher_tests "[.bench]"`): log throughput of
// one node and the latency from a line's read to its storage, against the loopback test workspace.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "launcher/agent/node_agent.h"
#include "tests/launcher/test_workspace.h"

using namespace air::launcher;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

NodeAgentOptions options_for(air::test::TestWorkspace& ws, const std::string& dir, const std::string& command) {
  ws.node("bench", 1, 0).spec = {{"run_id", "bench"}, {"attempt", 1}, {"node_rank", 0}, {"num_nodes", 1},
                                 {"command", command}};
  NodeAgentOptions o;
  o.server = ws.url();
  o.run_id = "bench";
  o.attempt = 1;
  o.node = 0;
  o.workdir = dir;
  o.bin_dir = AIR_BIN_DIR;
  o.token = ws.token();
  o.handle_signals = false;
  return o;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/air-bench-XXXXXX";
  return mkdtemp(tmpl);
}

}  // namespace

TEST_CASE("bench: log throughput and latency of one node", "[.bench]") {
  std::printf("%-40s %12s\n", "measure", "value");
  for (int mb : {256, 1024}) {
    air::test::TestWorkspace ws;
    std::string dir = temp_dir();
    // 100-byte lines, numbered, so the checker can count lost or duplicated ones.
    std::string cmd = "awk 'BEGIN{for(i=1;i<=" + std::to_string(mb * 10486) +
                      ";i++) printf \"%09d %s\\n\", i, \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}'";
    auto o = options_for(ws, dir, cmd);
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(run_node_agent(o) == 0);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto node = ws.snapshot_of("bench", 1, 0);
    std::istringstream in(node.log);
    std::string line;
    long expect = 1, bad = 0;
    while (std::getline(in, line)) {
      if (std::stol(line.substr(line.find(" o ") + 3, 9)) != expect) ++bad;
      ++expect;
    }
    std::printf("%-40s %9.1f MB/s  (%ld lines, %ld out of place, %.2f s, %d requests)\n",
                ("throughput, " + std::to_string(mb) + " MiB of output").c_str(), node.log.size() / s / 1e6,
                expect - 1, bad, s, node.log_posts);
    fs::remove_all(dir);
  }
  {
    air::test::TestWorkspace ws;
    std::string dir = temp_dir();
    auto o = options_for(ws, dir, "for i in $(seq 1 200); do echo tick $i; sleep 0.01; done");
    REQUIRE(run_node_agent(o) == 0);
    auto node = ws.snapshot_of("bench", 1, 0);
    std::vector<long> lat;
    size_t pos = 0;
    for (auto [size, at] : node.arrivals) {
      while (pos < size) {
        long ts = std::stol(node.log.substr(pos, 13));
        lat.push_back(at - ts);
        pos = node.log.find('\n', pos) + 1;
      }
    }
    std::sort(lat.begin(), lat.end());
    std::printf("%-40s %9ld ms\n", "latency read->stored p50", lat[lat.size() / 2]);
    std::printf("%-40s %9ld ms\n", "latency read->stored p95", lat[lat.size() * 95 / 100]);
    std::printf("%-40s %9ld ms\n", "latency read->stored max", lat.back());
    fs::remove_all(dir);
  }
}
