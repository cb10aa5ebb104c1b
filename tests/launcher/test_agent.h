// The node-agent options every agent test starts from: a test workspace's URL and token, short timeouts,
// no signal handlers (the test process owns them). Tests change single fields after this.
#pragma once
#include <chrono>
#include <string>

#include "launcher/agent/node_agent.h"
#include "tests/launcher/test_workspace.h"

namespace air::launcher_test {

inline launcher::NodeAgentOptions agent_options(const air::test::TestWorkspace& ws, const std::string& run_id,
                                                int attempt, int node, const std::string& workdir) {
  using namespace std::chrono_literals;
  launcher::NodeAgentOptions o;
  o.server = ws.url();
  o.run_id = run_id;
  o.attempt = attempt;
  o.node = node;
  o.workdir = workdir;
  o.bin_dir = AIR_BIN_DIR;
  o.token = ws.token();
  o.heartbeat_interval = 100ms;
  o.drain_timeout = 20s;
  o.spec_timeout = 2s;
  o.handle_signals = false;
  return o;
}

}  // namespace air::launcher_test
