// The seam between the scheduler and the machines that run nodes. The scheduler launches one attempt at a
// time: the local backend starts one `air node` agent per node as a child process; a batch backend (Slurm)
// submits the whole attempt as one job whose state the scheduler polls. Tests substitute a backend that
// records what it was asked to do.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace air::server {

struct NodeLaunch {
  std::string run_id;
  int attempt = 1, rank = 0;
  std::string server_url;  // where the agent reaches the workspace
  std::string token;       // the node token (passed in the environment, never argv)
  std::string workdir;     // the agent's own folder
  std::string gpus;        // CUDA_VISIBLE_DEVICES for the node, "" for none
  std::string bin_dir;     // where air, air-torchrun, air-train live
  std::string agent_log;   // the agent's own stdout/stderr
  std::string run_as;      // root workspace: the unix account the command runs as ("" : the agent's)
  bool require_sandbox = false;  // the agent fails the node where it cannot build the run sandbox
  bool sandbox_checked = false;  // the workspace built one on this machine at start: the agent need not probe
};

// Everything one attempt of a run needs, for backends that launch a whole attempt at once.
struct AttemptLaunch {
  std::string run_id, experiment_name;
  int attempt = 1, num_nodes = 1;
  std::string server_url, token, bin_dir;
  std::string attempt_dir;                // $home/runs/<run>/attempt_<k>: node_<n>/ and node_<n>.agent.log
  std::vector<std::string> node_gpus;     // per node: CUDA_VISIBLE_DEVICES ("" for none); local backend only
  std::string accelerator_type;
  int accelerators_per_node = 0;
  bool gpu = false;
  std::optional<int> timeout_minutes;
  std::string pool;            // compute.pool_id ("" for the default pool); Slurm: a partition
  std::string priority_class;  // BEST_EFFORT | NORMAL | CRITICAL; Slurm: a QOS or --nice
  std::string run_as;          // root workspace: the owner's unix account (local: the agents' --run-as; Slurm: the job's --uid)
  bool require_sandbox = false;
  bool sandbox_checked = false;  // local backend: the sandbox was built on this machine at start
  // The volumes the nodes mount (as in the node spec): a Slurm job run as its owner's account gets their
  // host folders made and opened to it before submission (slurm_accounts.h).
  std::string volumes_root;
  std::vector<std::string> volumes, read_only_volumes;
};

struct AttemptLaunchResult {
  std::vector<int> agent_pids;                 // per node; 0 where unknown (batch backends)
  std::map<int, std::string> node_errors;      // rank -> why its agent could not be started
  std::string job_id;                          // the batch system's job id; "" for the local backend
  std::string message;                         // e.g. "submitted to Slurm as job 42"
};

// A batch job as the batch system sees it.
struct JobState {
  enum class Phase { kQueued, kRunning, kEnded, kUnknown };
  Phase phase = Phase::kUnknown;
  std::string state;   // the batch system's own name: PENDING, RUNNING, TIMEOUT, NODE_FAIL, CANCELLED...
  std::string reason;  // why it waits (Resources, Priority...) or why it ended
  std::string nodes;   // the nodes it runs on, when known
};

class Backend {
 public:
  virtual ~Backend() = default;
  // GPUs this backend hands out itself (indices 0..n-1); -1 when the batch system allocates them.
  virtual int total_gpus() const = 0;
  // Starts every node of one attempt. The default starts one agent per node with start_node. Throws
  // air::Error when the attempt as a whole cannot be launched (e.g. sbatch failed).
  virtual AttemptLaunchResult launch_attempt(const AttemptLaunch& launch);
  // True for a batch system: launch_attempt may take seconds, so the workspace calls it from its tick
  // thread without its lock; false: it is called at once, under the lock (fork/exec only).
  virtual bool batch() const { return false; }

  // Per-node agents (the local backend).
  // Starts the agent for one node; returns its pid (its own session and process group).
  virtual int start_node(const NodeLaunch& launch);
  // Whether the agent process still exists (reaps it when it is our child).
  virtual bool agent_alive(int /*agent_pid*/) { return false; }
  // Kills every process of the agent's session (the agent, and its command's process group).
  virtual void kill_node(int /*agent_pid*/) {}

  // Batch jobs (Slurm). Both are called without the workspace's lock held, since they run client
  // commands that may take seconds; both throw air::Error when the batch system cannot be asked.
  // The state of each job id; a job the batch system no longer knows is absent from the map.
  virtual std::map<std::string, JobState> job_states(const std::vector<std::string>& /*job_ids*/) { return {}; }
  // Removes the job from the queue, or ends it with its processes on every node.
  virtual void cancel_job(const std::string& /*job_id*/) {}
};

}  // namespace air::server
