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
#include "core/sandbox/sandbox.h"
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
  std::string run_as;   // as root: the unix account the command runs as (the run owner's; air-u-* made if missing)
  bool require_sandbox = false;  // no sandbox on this node fails the node (a workspace of several users)
  bool sandbox_checked = false;  // the workspace built one on this machine at start: skip the probe (~15 ms)
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
  bool code_shared = false;      // code_dir's files are read-only links into the node's code cache
};

// The command's whole environment: the agent's own (minus its credentials), the spec's env_variables,
// then the contract's variables, which win.
std::vector<std::string> build_command_env(const api::NodeSpec& spec, const NodeAgentOptions& options,
                                           const CommandPaths& paths, const std::vector<std::string>& inherited);

// The current process's environment as "NAME=value" strings.
std::vector<std::string> current_environment();

// Seals the command off (launcher/agent/sandbox.cc): makes the volume folders the workload names, hands the
// command's files to the account it runs as (root: options.run_as), and returns the argv words to run it
// under (the sandbox, or only setpriv), or, where this node cannot build a sandbox, a notice for the node
// log (AIR_VOLUMES_ROOT is then added to env). Throws air::Error where options.require_sandbox forbids that.
struct SandboxSetup {
  std::vector<std::string> argv_prefix;
  std::string notice;  // non-empty without a sandbox
  UnixAccount account; // the account the command runs as; empty name: the agent's own
};
// `why`: sandbox_unavailable()'s answer, asked once per node.
SandboxSetup prepare_sandbox(const api::NodeSpec& spec, const NodeAgentOptions& options, const std::string& why,
                             const std::string& node_dir, const CommandPaths& paths, const std::string& venv,
                             std::vector<std::string>& env, AgentLog& log);
// Why this node cannot build the run sandbox ("" when it can; the probe is skipped where the workspace made it).
std::string sandbox_unavailable(const NodeAgentOptions& options);
// Whether the command will run as options.run_as rather than as the agent: a root agent with the sandbox.
bool runs_as_other_account(const NodeAgentOptions& options, const std::string& why);

// Gives code_dir the snapshot `digest`. Its archive is the workspace's blob on this machine where the agent
// can read it, else downloaded (from the workspace's store, or from volume_path through the Files API when
// the workload keeps it in a remote_volume) to DIR/snapshot.tar.zst; its SHA-256 is checked against the digest
// either way. With shared_cache (a folder; launcher/agent/code_cache.h) the files are hard links into the
// node's unpacked copy of that digest, made once: returns true. Else (or when the cache cannot serve) the
// archive is unpacked into code_dir: returns false.
bool fetch_and_unpack_snapshot(Client& client, const std::string& digest, const std::string& volume_path,
                               const std::string& workdir, const std::string& code_dir, AgentLog& log,
                               const air::UnpackLimits& limits = {}, const std::string& shared_cache = "");

}  // namespace air::launcher
