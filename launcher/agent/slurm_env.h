// The node agent under Slurm (`air node --slurm`, started by srun from the Slurm backend's batch script):
// the node's rank, the node count and MASTER_ADDR come from the job's SLURM_* variables (docs/slurm.md).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/wire/api.h"

namespace air::launcher {

struct NodeAgentOptions;
class AgentLog;

// Expands Slurm's hostlist syntax: "node[1-3,7],gpu[01-02]-ib,login" -> node1 node2 node3 node7 gpu01-ib
// gpu02-ib login (zero padding kept, several bracket groups multiply). Throws air::Error on bad syntax.
std::vector<std::string> expand_hostlist(const std::string& list);

// Sets the node rank from SLURM_NODEID and replaces %n in the working folder with it. env: the
// process environment (name -> value). Throws air::Error when SLURM_NODEID is missing or not a number.
void apply_slurm_node(NodeAgentOptions& options, const std::map<std::string, std::string>& env);

// Overrides the spec's node rank, node count and MASTER_ADDR with what Slurm says: SLURM_NODEID,
// SLURM_JOB_NUM_NODES (which must equal the run's node count), and the address of the first host of
// SLURM_JOB_NODELIST. Throws air::Error with the reason when any is missing or wrong.
void apply_slurm_spec(api::NodeSpec& spec, const std::map<std::string, std::string>& env);

// The first non-loopback IPv4 (else IPv6, else loopback) address of host. Throws air::Error.
std::string resolve_host(const std::string& host);

std::map<std::string, std::string> environment_map();

}  // namespace air::launcher
