// `air node`: the per-node agent the workspace starts on each node of a run (see docs/agent.md).
// Not for people: the token comes from AIR_NODE_TOKEN, never from the command line (`ps` shows argv).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <memory>

#include "cli/verbs.h"
#include "core/base/error.h"
#include "launcher/agent/node_agent.h"
#include "launcher/agent/slurm_env.h"

namespace air::cli {

void setup_node(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("node", "Run one node of a run (started by the workspace; not for direct use)");
  cmd->group("");  // hidden from `air --help`
  auto o = std::make_shared<launcher::NodeAgentOptions>();
  auto drain_s = std::make_shared<int>(600);
  cmd->add_option("--server", o->server, "Workspace URL")->required();
  cmd->add_option("--run", o->run_id, "Run id")->required();
  cmd->add_option("--attempt", o->attempt, "Attempt number")->required();
  auto* node = cmd->add_option("--node", o->node, "Node rank");
  cmd->add_flag("--slurm", o->slurm, "Started by srun: the rank is SLURM_NODEID; %n in --workdir is replaced by it")
      ->excludes(node);
  cmd->add_option("--workdir", o->workdir, "This node's working directory")->required();
  cmd->add_option("--gpus", o->gpus, "CUDA_VISIBLE_DEVICES for the command");
  cmd->add_option("--bin-dir", o->bin_dir, "Folder put first on the command's PATH (default: air's own)");
  cmd->add_option("--run-as", o->run_as, "As root: the unix account the command runs as (air-u-* made if missing)");
  cmd->add_flag("--require-sandbox", o->require_sandbox, "Fail rather than run the command without the run sandbox");
  cmd->add_flag("--sandbox-checked", o->sandbox_checked, "The workspace built the run sandbox on this machine: no probe");
  cmd->add_option("--drain-timeout", *drain_s, "Seconds to keep shipping logs after the command ended")
      ->default_val(600);
  cmd->callback([o, drain_s, node, &ctx] {
    const char* token = std::getenv("AIR_NODE_TOKEN");
    o->token = token ? token : "";
    o->drain_timeout = std::chrono::seconds(*drain_s);
    o->err = ctx.err;
    if (o->slurm) launcher::apply_slurm_node(*o, launcher::environment_map());
    else if (node->count() == 0) throw usage_error("air node needs --node (or --slurm inside a Slurm job step)");
    ctx.exit_code = launcher::run_node_agent(*o);
  });
}

}  // namespace air::cli
