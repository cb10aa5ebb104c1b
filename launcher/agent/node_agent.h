// The node agent (`air node`): fetches its node spec from the workspace, prepares the code and the
// hyperparameters, runs the command in its own process group, ships its logs, heartbeats, obeys "stop",
// and reports how it ended. See docs/agent.md.
#pragma once
#include <chrono>
#include <iosfwd>
#include <mutex>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "core/client/client.h"
#include "core/snapshot/snapshot.h"

namespace air::launcher {

struct NodeAgentOptions {
  std::string server;  // http(s)://host:port
  std::string run_id;
  int attempt = 1;
  int node = 0;
  std::string workdir;
  std::string gpus;     // CUDA_VISIBLE_DEVICES for the command; empty: leave as inherited
  std::string bin_dir;  // first on the command's PATH; empty: the folder of the running executable
  std::string token;    // from AIR_NODE_TOKEN; never printed
  bool slurm = false;   // started by srun: rank, node count and MASTER_ADDR from SLURM_* (launcher/agent/slurm_env.h)
  std::chrono::milliseconds heartbeat_interval{500};
  std::chrono::milliseconds stop_grace{5000};
  // How long a finished command waits for its log to reach the workspace (which may be restarting).
  std::chrono::milliseconds drain_timeout{std::chrono::minutes(10)};
  // How long to keep trying to fetch the spec while the workspace is unreachable.
  std::chrono::milliseconds spec_timeout{std::chrono::minutes(2)};
  bool handle_signals = true;  // SIGTERM/SIGINT/SIGHUP stop the command first (off for in-process tests)
  std::ostream* err = nullptr; // where diagnostics are echoed besides DIR/agent.log
};

// Runs the agent to the end; returns the process exit code (0: the command succeeded, 1: it failed or
// could not start, 130: the agent was interrupted). Throws air::Error only for bad options.
int run_node_agent(const NodeAgentOptions& options);

// Diagnostics to DIR/agent.log (timestamped) and to a stream ("air node: ..."); thread-safe.
class AgentLog {
 public:
  AgentLog(const std::string& path, std::ostream* err);
  ~AgentLog();
  void info(const std::string& message);
  // Values replaced by [REDACTED] in every later message (the run's secrets and the node token).
  void set_redaction(std::vector<std::string> values);

 private:
  std::vector<std::string> redact_;
  std::mutex mu_;
  int fd_ = -1;
  std::ostream* err_;
};

struct CommandPaths {
  std::string code_dir;          // CODE_SOURCE_PATH
  std::string hyperparams_path;  // HYPERPARAMETERS_PATH
  std::string bin_dir;
};

// The command's whole environment: the agent's own (minus its credentials), the spec's env_variables,
// then the contract's variables, which win.
std::vector<std::string> build_command_env(const api::NodeSpec& spec, const NodeAgentOptions& options,
                                           const CommandPaths& paths, const std::vector<std::string>& inherited);

// The current process's environment as "NAME=value" strings.
std::vector<std::string> current_environment();

// Makes the volume folders the workload names and decides how the command sees /Volumes: the argv words
// to run it under (bubblewrap), or none and AIR_VOLUMES_ROOT added to env with a notice for the node log.
struct VolumesSetup {
  std::vector<std::string> argv_prefix;
  std::string notice;  // non-empty on the fallback
};
VolumesSetup prepare_volumes(const api::NodeSpec& spec, const std::string& cwd, std::vector<std::string>& env,
                             AgentLog& log);

// Downloads the snapshot to DIR/snapshot.tar.zst (checking its SHA-256) and unpacks it into code_dir.
// Downloads the snapshot (from the workspace's store, or from volume_path through the Files API when the
// workload keeps it in a remote_volume), checks its SHA-256 against digest and unpacks it into code_dir.
void fetch_and_unpack_snapshot(Client& client, const std::string& digest, const std::string& volume_path,
                               const std::string& workdir, const std::string& code_dir, AgentLog& log,
                               const air::UnpackLimits& limits = {});

}  // namespace air::launcher
