// The Slurm backend's pieces that need no cluster: the sbatch command line and batch script (no token in
// either), squeue parsing, end reasons, server.conf, and run_command's deadline. The real cluster is
// exercised by tests/e2e/slurm_*.sh.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/base/error.h"
#include "server/backends/command_runner.h"
#include "server/workspace/config.h"
#include "server/backends/slurm.h"
#include "server/backends/slurm_accounts.h"

using namespace air::server;

namespace {

AttemptLaunch launch() {
  AttemptLaunch l;
  l.run_id = "ab12cd34";
  l.attempt = 2;
  l.num_nodes = 2;
  l.server_url = "http://10.213.0.1:8470";
  l.token = "air_secret_token_value";
  l.bin_dir = "/opt/air/bin";
  l.attempt_dir = "/srv/air/runs/ab12cd34/attempt_2";
  l.accelerator_type = "GPU_8xH100";
  l.accelerators_per_node = 8;
  l.gpu = true;
  l.timeout_minutes = 90;
  return l;
}

}  // namespace

TEST_CASE("slurm: sbatch gets nodes, one task per node, GPUs, time, job name, partition, account, extras last") {
  SlurmOptions o;
  o.partition = "gpu";
  o.account = "ml";
  o.extra_options = {"--qos=high"};
  auto a = sbatch_argv(launch(), o, "/x/slurm_job.sh");
  std::vector<std::string> want = {"sbatch",
                                   "--parsable",
                                   "--job-name=air-ab12cd34-2",
                                   "--nodes=2",
                                   "--ntasks-per-node=1",
                                   "--chdir=/srv/air/runs/ab12cd34/attempt_2",
                                   "--output=/srv/air/runs/ab12cd34/attempt_2/slurm-%j.out",
                                   "--gpus-per-node=8",
                                   "--time=90",
                                   "--partition=gpu",
                                   "--account=ml",
                                   "--qos=high",
                                   "/x/slurm_job.sh"};
  CHECK(a == want);
}

TEST_CASE("slurm: CPU types ask for no GPUs and a run without timeout gets no --time") {
  auto l = launch();
  l.gpu = false;
  l.accelerator_type = "CPU_2xHOST";
  l.accelerators_per_node = 2;
  l.timeout_minutes.reset();
  for (const auto& arg : sbatch_argv(l, SlurmOptions{}, "s.sh")) {
    CHECK(arg.rfind("--gpus", 0) != 0);
    CHECK(arg.rfind("--time", 0) != 0);
    CHECK(arg.rfind("--partition", 0) != 0);
  }
}

TEST_CASE("slurm: the batch script runs one agent per node through srun and holds no token") {
  SlurmOptions o;
  o.air_binary = "/opt/air/bin/air";
  auto l = launch();
  l.bin_dir = "/opt/it's here";
  std::string s = batch_script(l, o);
  CHECK(s.find("exec srun --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=0 "
               "--output='/srv/air/runs/ab12cd34/attempt_2/node_%n.agent.log'") != std::string::npos);
  CHECK(s.find("'/opt/air/bin/air' node --slurm --server 'http://10.213.0.1:8470' --run ab12cd34 --attempt 2 "
               "--workdir '/srv/air/runs/ab12cd34/attempt_2/node_%n' --bin-dir '/opt/it'\\''s here'") !=
        std::string::npos);
  CHECK(s.find("air_secret_token_value") == std::string::npos);
  for (const auto& arg : sbatch_argv(l, o, "s.sh")) CHECK(arg.find("air_secret") == std::string::npos);
}

TEST_CASE("slurm: squeue lines map to queued, running and ended, with the pending reason") {
  auto m = parse_squeue("41|PENDING|Resources|\n42|RUNNING|None|node[1-2]\n43|COMPLETING|None|node1\n"
                        "44|TIMEOUT|TimeLimit|node[1-2]\n45|NODE_FAIL|None|node2\n46|CANCELLED|None|\n");
  REQUIRE(m.size() == 6);
  CHECK(m["41"].phase == JobState::Phase::kQueued);
  CHECK(m["41"].reason == "Resources");
  CHECK(m["42"].phase == JobState::Phase::kRunning);
  CHECK(m["42"].reason.empty());
  CHECK(m["42"].nodes == "node[1-2]");
  CHECK(m["43"].phase == JobState::Phase::kRunning);
  CHECK(m["44"].phase == JobState::Phase::kEnded);
  CHECK(describe_slurm_end(m["44"]) == "time limit reached (TIMEOUT), reason TimeLimit");
  CHECK(describe_slurm_end(m["45"]) == "node failure (NODE_FAIL)");
  CHECK(describe_slurm_end(m["46"]) == "canceled in Slurm (scancel) (CANCELLED)");
  CHECK(describe_slurm_end({JobState::Phase::kEnded, "WEIRD", "", ""}) == "WEIRD");
}

TEST_CASE("slurm: run_command captures output and exit code, passes env, and kills at the deadline") {
  using namespace std::chrono_literals;
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; echo $AIR_X; exit 3"}, 5s, {"AIR_X=fromenv"});
  CHECK(r.exit_code == 3);
  CHECK(r.out == "out\nfromenv\n");
  CHECK(r.err == "err\n");
  CHECK(describe_failure("sh", r, 5s) == "sh exited with code 3: err");
  ::setenv("AIR_GONE", "x", 1);
  CHECK(run_command({"sh", "-c", "echo ${AIR_GONE:-unset}"}, 5s, {"AIR_GONE"}).out == "unset\n");
  ::unsetenv("AIR_GONE");
  auto t0 = std::chrono::steady_clock::now();
  auto slow = run_command({"sh", "-c", "sleep 30 & sleep 30"}, 300ms);
  CHECK(slow.timed_out);
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  CHECK(describe_failure("squeue", slow, 15s) == "squeue did not answer within 15 s (is the Slurm controller up?)");
  CHECK_THROWS_WITH(run_command({"no-such-command-air"}, 1s), "no-such-command-air not found on PATH");
}

TEST_CASE("slurm: server.conf gives the backend and Slurm options, bad lines are located errors") {
  char t[] = "/tmp/air-conf-XXXXXX";
  std::string dir = ::mkdtemp(t);
  std::string p = dir + "/server.conf";
  CHECK(read_server_config(p).backend.empty());  // no file: nothing set
  std::ofstream(p) << "# the workspace\nbackend = slurm\nadvertise_url = http://10.0.0.5:8470  # head node\n"
                      "[slurm]\npartition = gpu\naccount = \"ml\"\noption = --qos=high\noption = --exclusive\n";
  auto c = read_server_config(p);
  CHECK(c.backend == "slurm");
  CHECK(c.advertise_url == "http://10.0.0.5:8470");
  CHECK(c.slurm_partition == "gpu");
  CHECK(c.slurm_account == "ml");
  CHECK(c.slurm_options == std::vector<std::string>{"--qos=high", "--exclusive"});
  std::ofstream(p) << "backend = slurm\n[slurm]\npartiton = gpu\n";
  CHECK_THROWS_WITH(read_server_config(p), p + ":3: unknown key 'partiton' in [slurm]");
  std::filesystem::remove_all(dir);
}

TEST_CASE("slurm as root: the job is submitted as the owner's account, whose agents need no --run-as") {
  air::UnixAccount bob{"air-u-bob", 990, 985};
  auto opts = owner_job_options(bob);
  CHECK(opts == std::vector<std::string>{"--uid=air-u-bob", "--gid=985"});
  AttemptLaunch l = launch();
  l.run_as = "air-u-bob";
  l.require_sandbox = true;
  std::string script = batch_script(l, SlurmOptions{});
  CHECK(script.find("--run-as") == std::string::npos);
  CHECK(script.find(" --require-sandbox\n") != std::string::npos);
  CHECK(script.find(l.token) == std::string::npos);
  CHECK(slurm_job_accounts_note(true).find("sbatch --uid=air-u-<user>") != std::string::npos);
  CHECK(slurm_job_accounts_note(false).find("the sandbox on each node is the only wall") != std::string::npos);
}

TEST_CASE("slurm as root: a folder above the home that the owner's account cannot enter is named") {
  namespace fs = std::filesystem;
  fs::path top = fs::temp_directory_path() / ("air-closed-" + std::to_string(::getpid()));
  fs::create_directories(top / "home" / "runs");
  air::UnixAccount bob{"air-u-bob", 54321, 54321};
  gid_t jobs = 54320;
  fs::permissions(top, fs::perms::owner_all);  // 0700, root's (or the tester's)
  std::string why = folder_closed_above((top / "home").string(), bob, jobs);
  CHECK(why.find("runs as air-u-bob, which cannot enter " + top.string() + " (mode 0700)") != std::string::npos);
  fs::permissions(top, fs::perms::owner_all | fs::perms::others_exec);  // 0701: search, no listing
  CHECK(folder_closed_above((top / "home").string(), bob, jobs).empty());
  // A group's bits are what count for a member of that group (here, by its primary group id).
  air::UnixAccount member{"air-u-m", 54322, ::getegid()};
  fs::permissions(top, fs::perms::owner_all | fs::perms::others_exec);
  CHECK_FALSE(folder_closed_above((top / "home").string(), member, jobs).empty());  // group bits: none
  fs::permissions(top, fs::perms::owner_all | fs::perms::group_exec);
  CHECK(folder_closed_above((top / "home").string(), member, jobs).empty());
  fs::permissions(top, fs::perms::owner_all);
  fs::remove_all(top);
}
