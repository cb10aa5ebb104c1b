// The agent under Slurm: hostlist expansion, rank and %n from SLURM_NODEID, and the spec's overrides.
#include <catch2/catch.hpp>

#include "core/base/error.h"
#include "launcher/agent/node_agent.h"
#include "launcher/agent/slurm_env.h"

using namespace air::launcher;
using Strings = std::vector<std::string>;

TEST_CASE("slurm env: hostlists expand ranges, lists, zero padding, suffixes and several groups") {
  CHECK(expand_hostlist("node[1-2]") == Strings{"node1", "node2"});
  CHECK(expand_hostlist("node1") == Strings{"node1"});
  CHECK(expand_hostlist("gpu[08-10,12],login") == Strings{"gpu08", "gpu09", "gpu10", "gpu12", "login"});
  CHECK(expand_hostlist("a[1-2]-ib,b3") == Strings{"a1-ib", "a2-ib", "b3"});
  CHECK(expand_hostlist("r[1-2]n[1-2]") == Strings{"r1n1", "r1n2", "r2n1", "r2n2"});
  CHECK_THROWS_WITH(expand_hostlist("node[1-2"), "bad Slurm hostlist 'node[1-2': unbalanced '['");
  CHECK_THROWS_WITH(expand_hostlist("node[2-1]"), "bad Slurm hostlist 'node[2-1]': range '2-1'");
  CHECK_THROWS_WITH(expand_hostlist("node[a-b]"), "bad Slurm hostlist 'node[a-b]': range 'a-b'");
}

TEST_CASE("slurm env: the node rank comes from SLURM_NODEID and %n in the workdir becomes it") {
  NodeAgentOptions o;
  o.workdir = "/runs/x/attempt_1/node_%n";
  apply_slurm_node(o, {{"SLURM_NODEID", "1"}});
  CHECK(o.node == 1);
  CHECK(o.workdir == "/runs/x/attempt_1/node_1");
  NodeAgentOptions bad;
  CHECK_THROWS_WITH(apply_slurm_node(bad, {}),
                    "SLURM_NODEID is not set: `air node --slurm` runs inside a Slurm job step (srun)");
  CHECK_THROWS_WITH(apply_slurm_node(bad, {{"SLURM_NODEID", "x"}}), "SLURM_NODEID='x' is not a number");
}

TEST_CASE("slurm env: the spec takes rank, node count and the first host's address from Slurm") {
  air::api::NodeSpec s;
  s.num_nodes = 2;
  s.master_addr = "127.0.0.1";
  apply_slurm_spec(s, {{"SLURM_NODEID", "1"}, {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_JOB_NODELIST", "localhost,x[1-3]"}});
  CHECK(s.node_rank == 1);
  CHECK((s.master_addr == "127.0.0.1" || s.master_addr == "::1"));
  CHECK(resolve_host("127.0.0.1") == "127.0.0.1");
  CHECK_THROWS_WITH(
      apply_slurm_spec(s, {{"SLURM_NODEID", "0"}, {"SLURM_JOB_NUM_NODES", "3"}, {"SLURM_JOB_NODELIST", "n[1-3]"}}),
      "Slurm gave this job 3 node(s) but the run needs 2");
  CHECK_THROWS_AS(resolve_host("no-such-host.invalid"), air::Error);
}
