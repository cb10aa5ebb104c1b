// The local backend: one `air node` agent per node, each started with setsid in its own working folder,
// with its own GPU subset on a GPU machine.
#pragma once
#include "server/backends/backend.h"

namespace air::server {

// Counts GPUs with `nvidia-smi -L` (0 when it is missing); AIR_LOCAL_GPUS overrides the count.
int detect_local_gpus();

class LocalBackend : public Backend {
 public:
  explicit LocalBackend(std::string air_binary, int gpus = detect_local_gpus())
      : air_binary_(std::move(air_binary)), gpus_(gpus) {}
  int total_gpus() const override { return gpus_; }
  int start_node(const NodeLaunch& launch) override;
  bool agent_alive(int agent_pid) override;
  void kill_node(int agent_pid) override;

 private:
  std::string air_binary_;
  int gpus_;
};

// Pids of every process whose session id is sid (read from /proc).
std::vector<int> session_members(int sid);

// Starts nothing: the node agents are run by someone else and only talk to the workspace (bench/agent_sim
// for bench/server_load.sh). `air server --backend external`.
class ExternalBackend : public Backend {
 public:
  int total_gpus() const override { return 0; }
  int start_node(const NodeLaunch&) override { return 0; }
  bool agent_alive(int) override { return true; }  // liveness is the heartbeat's alone
};

}  // namespace air::server
