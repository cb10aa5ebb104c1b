// `air get run`'s system summary and alert lines (cli/system_summary.h), from the metrics the agents log.
#include <catch2/catch.hpp>

#include "cli/runs/system_summary.h"

using namespace air;
using namespace air::cli;

TEST_CASE("system summary: per node, GPU utilisation and memory last and mean, CPU and memory", "[health]") {
  std::vector<api::Metric> latest = {
      {"loss", 2.0, 0, 10},
      {"system/node_0/gpu_0_utilization_percentage", 90, 0, 5},
      {"system/node_0/gpu_1_utilization_percentage", 70, 0, 5},
      {"system/node_0/gpu_0_memory_usage_megabytes", 30000, 0, 5},
      {"system/node_0/gpu_1_memory_usage_megabytes", 20000, 0, 5},
      {"system/node_0/cpu_utilization_percentage", 12.4, 0, 5},
      {"system/node_0/system_memory_usage_megabytes", 10200, 0, 5},
      {"system/node_1/cpu_utilization_percentage", 3, 0, 5},
      {"system/node_1/network_receive_megabytes", 250.4, 0, 5},
      {"system/node_1/network_transmit_megabytes", 1000, 0, 5},
  };
  auto keys = summary_history_keys(latest);
  CHECK(keys == std::vector<std::string>{"system/node_0/gpu_0_utilization_percentage",
                                         "system/node_0/gpu_1_utilization_percentage",
                                         "system/node_0/gpu_0_memory_usage_megabytes",
                                         "system/node_0/gpu_1_memory_usage_megabytes"});
  MetricHistories h = {{"system/node_0/gpu_0_utilization_percentage", {50, 90}},
                       {"system/node_0/gpu_1_utilization_percentage", {30, 70}},
                       {"system/node_0/gpu_0_memory_usage_megabytes", {20000, 30000}},
                       {"system/node_0/gpu_1_memory_usage_megabytes", {10000, 20000}}};
  CHECK(system_summary(latest, h) ==
        "    node 0  GPU util 80% (mean 60%)  GPU memory 50.0 GB (mean 40.0 GB)  2 GPU(s)  CPU 12%  memory 10.2 GB\n"
        "    node 1  no GPU readings  CPU 3%  network in 250 MB, out 1000 MB\n");
  CHECK(system_summary({{"loss", 1, 0, 1}}, {}).empty());
  CHECK(is_system_metric("system/node_0/cpu_utilization_percentage"));
  CHECK_FALSE(is_system_metric("loss"));
}

TEST_CASE("alert lines: attempt, node, kind, whether active, time and message", "[health]") {
  api::RunInfo r;
  CHECK(alert_lines(r).empty());
  r.alerts.push_back({1, 1, "stall", "node 1: no output and GPUs idle for 10 min; ...", 0, false});
  r.alerts.push_back({2, 1, "straggler", "node 1 is a straggler: ...", 0, true});
  CHECK(alert_lines(r) ==
        "    attempt 1 node 1 stall -  node 1: no output and GPUs idle for 10 min; ...\n"
        "    attempt 2 node 1 straggler (active) -  node 1 is a straggler: ...\n");
}
