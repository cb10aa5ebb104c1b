// air-torchrun: a torchrun-compatible launcher that starts one process per local rank with torchrun's
// environment, forwards signals, and stops every rank when one fails (docs/torchrun.md).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace air::launcher {

using Environment = std::map<std::string, std::string>;

struct TorchrunOptions {
  int nnodes = 1;
  int node_rank = 0;
  std::string nproc_per_node = "1";  // a number, or gpu / auto / cpu (resolved by resolve_nproc)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool standalone = false;
  int tee = 0;                // bit 0: prefix stdout lines with the rank; bit 1: stderr (3 = both)
  bool no_python = false;     // run a *.py program as is instead of through `python3 -u`
  double grace_seconds = 10;  // between SIGTERM and SIGKILL when stopping ranks
  std::vector<std::string> command;  // the program and its arguments
};

// Parses torchrun's options (`--opt value`, `--opt=value`, dashes or underscores) up to the program;
// PET_<OPTION> environment variables give defaults. Throws air::Error (usage) on bad input.
TorchrunOptions parse_torchrun_args(const std::vector<std::string>& args, const Environment& env);

// Number of GPUs this node may use: CUDA_VISIBLE_DEVICES when set, else the lines of `nvidia-smi -L`.
int count_local_gpus(const Environment& env);

// Turns --nproc_per_node into a count: a number; `gpu` (the GPU count, an error when there is none);
// `auto` (the GPU count, or 1 without GPUs); `cpu` (the CPU count).
int resolve_nproc(const std::string& spec, const Environment& env);

// The variables one rank gets on top of the inherited environment.
Environment rank_environment(const TorchrunOptions& options, int nproc, int local_rank);

// Starts the ranks and waits for them; returns air-torchrun's exit code (0, the failing rank's code,
// or 128 + signal when air-torchrun itself was signalled).
int run_torchrun(const TorchrunOptions& options);

// The whole program: parses argv, runs, renders air::Error as `air-torchrun: error: ...`.
int torchrun_main(int argc, char** argv);

}  // namespace air::launcher
