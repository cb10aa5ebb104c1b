// The seam between the scheduler and the machines that run nodes. The local backend starts `air node`
// agents as child processes; tests substitute a backend that records what it was asked to do.
#pragma once
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
};

class Backend {
 public:
  virtual ~Backend() = default;
  // GPUs this backend can hand out (indices 0..n-1).
  virtual int total_gpus() const = 0;
  // Starts the agent for one node; returns its pid (its own session and process group).
  virtual int start_node(const NodeLaunch& launch) = 0;
  // Whether the agent process still exists (reaps it when it is our child).
  virtual bool agent_alive(int agent_pid) = 0;
  // Kills every process of the agent's session (the agent, and its command's process group).
  virtual void kill_node(int agent_pid) = 0;
};

}  // namespace air::server
