// The default per-attempt launch: one agent per node through start_node (the local backend's way).
#include "server/backends/backend.h"

#include <fmt/format.h>

#include "core/base/error.h"

namespace air::server {

int Backend::start_node(const NodeLaunch&) { throw Error("this backend does not start single nodes"); }

AttemptLaunchResult Backend::launch_attempt(const AttemptLaunch& l) {
  AttemptLaunchResult out;
  out.agent_pids.assign(l.num_nodes, 0);
  for (int n = 0; n < l.num_nodes; ++n) {
    NodeLaunch nl{l.run_id, l.attempt, n, l.server_url, l.token, fmt::format("{}/node_{}", l.attempt_dir, n),
                  n < static_cast<int>(l.node_gpus.size()) ? l.node_gpus[n] : "", l.bin_dir,
                  fmt::format("{}/node_{}.agent.log", l.attempt_dir, n), l.run_as, l.require_sandbox,
                    l.sandbox_checked};
    try {
      out.agent_pids[n] = start_node(nl);
    } catch (const std::exception& e) {
      out.node_errors[n] = e.what();
    }
  }
  return out;
}

}  // namespace air::server
