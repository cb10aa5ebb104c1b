// The workspace's own settings file, $AIR_HOME/server.conf (INI): which backend runs nodes and the Slurm
// options, so that an operator need not repeat them on every `air server` start. Flags win over the file.
#pragma once
#include <string>
#include <vector>

namespace air::server {

struct ServerConfig {
  std::string backend;        // local | slurm
  std::string advertise_url;  // the URL nodes use to reach the workspace
  std::string slurm_partition, slurm_account;
  std::vector<std::string> slurm_options;  // extra sbatch options, one per `option =` line
};

// Reads path; a missing file gives an empty config. Unknown keys and sections, and malformed lines, are
// errors that name the file and line (air::Error).
ServerConfig read_server_config(const std::string& path);

}  // namespace air::server
