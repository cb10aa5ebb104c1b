// sbatch / squeue / scancel for the Slurm backend. The node token travels in sbatch's environment, which
// Slurm exports to the job and srun to each task: it is in no argv and no file the workspace writes.
#include "server/backends/slurm.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <set>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "server/backends/command_runner.h"
#include "server/backends/slurm_accounts.h"

namespace air::server {

namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> sbatch_argv(const AttemptLaunch& l, const SlurmOptions& o, const std::string& script) {
  std::vector<std::string> a = {"sbatch",
                                "--parsable",
                                fmt::format("--job-name=air-{}-{}", l.run_id, l.attempt),
                                fmt::format("--nodes={}", l.num_nodes),
                                "--ntasks-per-node=1",
                                "--chdir=" + l.attempt_dir,
                                "--output=" + l.attempt_dir + "/slurm-%j.out"};
  if (l.gpu && l.accelerators_per_node > 0) a.push_back(fmt::format("--gpus-per-node={}", l.accelerators_per_node));
  if (l.timeout_minutes && *l.timeout_minutes > 0) a.push_back(fmt::format("--time={}", *l.timeout_minutes));
  auto pool = o.pool_partitions.find(l.pool);
  std::string partition = pool != o.pool_partitions.end() ? pool->second : o.partition;
  if (!partition.empty()) a.push_back("--partition=" + partition);
  if (!o.account.empty()) a.push_back("--account=" + o.account);
  std::string cls = l.priority_class.empty() ? "NORMAL" : l.priority_class;
  if (auto q = o.class_qos.find(cls); q != o.class_qos.end()) a.push_back("--qos=" + q->second);
  if (auto n = o.class_nice.find(cls); n != o.class_nice.end()) a.push_back(fmt::format("--nice={}", n->second));
  for (const auto& x : o.extra_options) a.push_back(x);
  a.push_back(script);
  return a;
}

// The run sandbox's settings for each node's agent (docs/security.md, "Threat model"): whether a node
// without a sandbox must refuse the command. A root workspace submits the job as the owner's account
// (sbatch --uid), so the agents already run as it: no --run-as.
static std::string sandbox_flags(const AttemptLaunch& l) {
  return l.require_sandbox ? " --require-sandbox" : "";
}

std::string batch_script(const AttemptLaunch& l, const SlurmOptions& o) {
  // %n in srun's --output and in the agent's --workdir is the node's index in the job (SLURM_NODEID).
  return fmt::format(
      "#!/bin/bash\n"
      "# air run {run}, attempt {k}: one node agent per allocated node. Written by the workspace; it holds no\n"
      "# credentials (the node token comes through the job's environment).\n"
      "exec srun --nodes={n} --ntasks-per-node=1 --kill-on-bad-exit=0 --output={log} \\\n"
      "  {air} node --slurm --server {url} --run {run} --attempt {k} --workdir {wd} --bin-dir {bin}{sandbox}\n",
      fmt::arg("run", l.run_id), fmt::arg("k", l.attempt), fmt::arg("n", l.num_nodes),
      fmt::arg("log", shell_quote(l.attempt_dir + "/node_%n.agent.log")), fmt::arg("air", shell_quote(o.air_binary)),
      fmt::arg("url", shell_quote(l.server_url)), fmt::arg("wd", shell_quote(l.attempt_dir + "/node_%n")),
      fmt::arg("bin", shell_quote(l.bin_dir)), fmt::arg("sandbox", sandbox_flags(l)));
}

AttemptLaunchResult SlurmBackend::launch_attempt(const AttemptLaunch& l) {
  fs::create_directories(l.attempt_dir);
  // A root workspace: the job is the owner's (its account, its folders), so Slurm accounts it to them.
  std::optional<UnixAccount> owner;
  if (!l.run_as.empty() && ::geteuid() == 0) owner = prepare_owner_job(l);
  std::string script = l.attempt_dir + "/slurm_job.sh";
  {
    std::ofstream f(script, std::ios::trunc);
    f << batch_script(l, opts_);
    if (!f.flush()) throw Error("cannot write the batch script " + script);
  }
  ::chmod(script.c_str(), 0755);
  // Only the node token reaches the job; the workspace's own credentials are not exported to it.
  std::vector<std::string> argv = sbatch_argv(l, opts_, script);
  if (owner) {
    auto as_owner = owner_job_options(*owner);
    argv.insert(argv.end() - 1, as_owner.begin(), as_owner.end());  // before the script
  }
  CommandResult r = run_command(argv, opts_.submit_timeout,
                                {"AIR_NODE_TOKEN=" + l.token, "AIR_TOKEN", "DATABRICKS_TOKEN"});
  if (r.timed_out || r.exit_code != 0)
    throw Error("cannot submit to Slurm: " + describe_failure("sbatch", r, opts_.submit_timeout));
  std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
  if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos)
    throw Error("sbatch answered '" + r.out + "', not a job id");
  AttemptLaunchResult out;
  out.agent_pids.assign(l.num_nodes, 0);
  out.job_id = id;
  out.message = "submitted to Slurm as job " + id;
  return out;
}

std::map<std::string, JobState> parse_squeue(const std::string& text) {
  std::map<std::string, JobState> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t pos = 0;
    while (true) {
      size_t bar = line.find('|', pos);
      f.push_back(line.substr(pos, bar == std::string::npos ? std::string::npos : bar - pos));
      if (bar == std::string::npos) break;
      pos = bar + 1;
    }
    if (f.size() < 3 || f[0].empty()) continue;
    JobState s;
    s.state = f[1];
    s.reason = f[2] == "None" ? "" : f[2];
    s.nodes = f.size() > 3 ? f[3] : "";
    static const std::set<std::string> kQueued = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                                                  "RESV_DEL_HOLD", "SUSPENDED", "STOPPED", "RESIZING"};
    static const std::set<std::string> kRunning = {"RUNNING", "CONFIGURING", "COMPLETING", "SIGNALING",
                                                   "STAGE_OUT"};
    s.phase = kQueued.count(s.state) ? JobState::Phase::kQueued
              : kRunning.count(s.state) ? JobState::Phase::kRunning
                                        : JobState::Phase::kEnded;
    out[f[0]] = s;
  }
  return out;
}

std::map<std::string, JobState> SlurmBackend::job_states(const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  std::string list;
  for (const auto& id : ids) list += (list.empty() ? "" : ",") + id;
  CommandResult r = run_command({"squeue", "-h", "--states=all", "-o", "%i|%T|%r|%N", "-j", list}, opts_.query_timeout);
  // squeue fails when none of the ids is known any more (they age out of the controller): then all are gone.
  if (!r.timed_out && r.exit_code != 0 && r.err.find("Invalid job id") != std::string::npos) return {};
  if (r.timed_out || r.exit_code != 0)
    throw Error("cannot query Slurm: " + describe_failure("squeue", r, opts_.query_timeout));
  return parse_squeue(r.out);
}

void SlurmBackend::cancel_job(const std::string& id) {
  CommandResult r = run_command({"scancel", id}, opts_.query_timeout);
  if (!r.timed_out && r.exit_code != 0 && r.err.find("Invalid job id") != std::string::npos) return;  // gone
  if (r.timed_out || r.exit_code != 0)
    throw Error(fmt::format("cannot cancel Slurm job {}: {}", id, describe_failure("scancel", r, opts_.query_timeout)));
}

std::string describe_slurm_end(const JobState& s) {
  static const std::map<std::string, std::string> kWhat = {
      {"TIMEOUT", "time limit reached"},
      {"NODE_FAIL", "node failure"},
      {"CANCELLED", "canceled in Slurm (scancel)"},
      {"PREEMPTED", "preempted"},
      {"BOOT_FAIL", "node boot failure"},
      {"DEADLINE", "deadline reached"},
      {"OUT_OF_MEMORY", "out of memory"},
      {"FAILED", "the batch script failed"},
      {"COMPLETED", "the batch script ended"},
  };
  auto it = kWhat.find(s.state);
  std::string what = it == kWhat.end() ? s.state : it->second + " (" + s.state + ")";
  if (!s.reason.empty()) what += ", reason " + s.reason;
  return what;
}

}  // namespace air::server
