// Runs a client command (sbatch, squeue, scancel...) with a deadline, capturing its output. Batch-system
// clients hang while their controller is down, so nothing here waits without a limit.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace air::server {

struct CommandResult {
  int exit_code = -1;       // -1 when it did not run to an exit (timeout, not found, killed)
  bool timed_out = false;
  std::string out, err;     // stdout and stderr, each capped at 1 MiB
};

// argv[0] is looked up on PATH. extra_env entries "NAME=value" are added to (or replace in) this process's
// environment for the child only; a bare "NAME" removes NAME. The child is killed (SIGKILL, its whole process group) at the
// deadline. Throws air::Error only when the process cannot be started at all.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::vector<std::string>& extra_env = {});

// "sbatch timed out after 30 s" / "sbatch exited with code 1: <first line of stderr>": for error messages.
std::string describe_failure(const std::string& name, const CommandResult& r, std::chrono::milliseconds timeout);

}  // namespace air::server
