// The workspace's own settings file, $AIR_HOME/server.conf (INI): which backend runs nodes and the Slurm
// options, so that an operator need not repeat them on every `air server` start. Flags win over the file.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/scheduler/fair_config.h"

namespace air::server {

struct ServerConfig {
  std::string backend;        // local | slurm
  std::string advertise_url;  // the URL nodes use to reach the workspace
  std::string slurm_partition, slurm_account;
  std::vector<std::string> slurm_options;  // extra sbatch options, one per `option =` line
  // The scheduler (docs/scheduler.md): GPU pools in file order ([pools] name = GPUs), the runtime assumed
  // for a run without timeout_minutes, whether CRITICAL runs preempt BEST_EFFORT ones.
  std::vector<std::pair<std::string, int>> pools;
  std::optional<int> default_runtime_minutes;
  std::optional<bool> preemption;
  // Slurm: pool -> partition (partition.NAME), priority class -> QOS (qos.CLASS) or nice (nice.CLASS).
  std::map<std::string, std::string> slurm_pool_partitions, slurm_class_qos;
  std::map<std::string, int> slurm_class_nice;
  sched::FairConfig fair;  // [fair_share], [shares], [quotas] (server/scheduler/fair_config.h)
};

// Reads path; a missing file gives an empty config. Unknown keys and sections, and malformed lines, are
// errors that name the file and line (air::Error).
ServerConfig read_server_config(const std::string& path);

}  // namespace air::server
