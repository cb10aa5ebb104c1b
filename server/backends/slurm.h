// The Slurm backend: one attempt of a run is one `sbatch` job whose batch script starts one `air node`
// agent per allocated node with `srun --ntasks-per-node=1`. The scheduler polls the job with `squeue` and
// cancels it with `scancel`. Every client command runs with a deadline (docs/slurm.md).
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "server/backends/backend.h"

namespace air::server {

struct SlurmOptions {
  std::string partition;                   // --partition (empty: the cluster's default)
  std::string account;                     // --account (empty: the user's default)
  std::vector<std::string> extra_options;  // more sbatch options, e.g. --qos=high; they come last, so they win
  // compute.pool_id -> --partition (instead of `partition`); priority_class -> --qos and/or --nice.
  std::map<std::string, std::string> pool_partitions, class_qos;
  std::map<std::string, int> class_nice;
  std::string air_binary;                  // the `air` the nodes run (the same path on every node)
  std::chrono::milliseconds submit_timeout{30000};  // sbatch
  std::chrono::milliseconds query_timeout{15000};   // squeue, scancel
};

class SlurmBackend : public Backend {
 public:
  explicit SlurmBackend(SlurmOptions opts) : opts_(std::move(opts)) {}
  int total_gpus() const override { return -1; }  // Slurm allocates GPUs (--gpus-per-node)
  AttemptLaunchResult launch_attempt(const AttemptLaunch& launch) override;
  bool batch() const override { return true; }
  std::map<std::string, JobState> job_states(const std::vector<std::string>& job_ids) override;
  void cancel_job(const std::string& job_id) override;

 private:
  SlurmOptions opts_;
};

// The sbatch command line for an attempt (the batch script path last) and the script's text. Exposed for
// tests: the token is in neither.
std::vector<std::string> sbatch_argv(const AttemptLaunch& l, const SlurmOptions& o, const std::string& script_path);
std::string batch_script(const AttemptLaunch& l, const SlurmOptions& o);

// Parses `squeue -h -o '%i|%T|%r|%N'` output.
std::map<std::string, JobState> parse_squeue(const std::string& text);

// What a Slurm job state means for the run ("time limit reached", "node failure"...).
std::string describe_slurm_end(const JobState& s);

// A word safe inside single quotes in a POSIX shell.
std::string shell_quote(const std::string& s);

}  // namespace air::server
