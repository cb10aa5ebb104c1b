// `air get run`'s system summary: per node, the GPUs' utilisation and memory (last and mean over the
// attempt) and the latest CPU and memory figures, from the system/node_<rank>/... metrics each node agent
// logs (launcher/agent/system_metrics.h); and the run's stall and straggler alerts.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/wire/api.h"

namespace air::cli {

// True for a metric an agent logged about its machine ("system/..."), not one the training code logged.
bool is_system_metric(const std::string& key);

// key -> values of a metric's history (in order); only the GPU utilisation and memory keys are read.
using MetricHistories = std::map<std::string, std::vector<double>>;

// The system metric keys whose history the summary uses (GPU utilisation and memory of every node).
std::vector<std::string> summary_history_keys(const std::vector<api::Metric>& latest);

// The summary's lines, each ending in '\n'; empty when the attempt logged no system metrics:
//   "    node 0  GPU util 95% (mean 93%)  GPU memory 30.0 GB (mean 29.5 GB)  2 GPU(s)  CPU 12%  memory 10.2 GB
//    network in 250 MB, out 1000 MB" (network: since the agent started)
std::string system_summary(const std::vector<api::Metric>& latest, const MetricHistories& histories);

// The run's alerts, one line each ("    attempt 1 node 1 stall (active) 12:00:03  node 1: ..."); empty for none.
std::string alert_lines(const api::RunInfo& r);

}  // namespace air::cli
