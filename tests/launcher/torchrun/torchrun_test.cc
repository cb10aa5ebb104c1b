// air-torchrun: option parsing in-process, and the real binary with real child processes (bash ranks).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "launcher/torchrun/torchrun.h"

using air::launcher::Environment;
using air::launcher::parse_torchrun_args;

namespace {

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr together
};

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs air-torchrun with the given arguments through the shell; the rank program is a bash script.
Result torchrun(const std::string& options, const std::string& script, const std::string& env = "") {
  std::string cmd = env + " " + std::string(AIR_BIN_DIR) + "/air-torchrun " + options + " bash -c " +
                    quote(script) + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/air-torchrun-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("torchrun parses torchrun's option forms up to the program") {
  auto o = parse_torchrun_args({"--nnodes=2", "--node-rank", "1", "--nproc_per_node=4", "--master_addr",
                                "10.0.0.1", "--master-port=1234", "--tee", "3", "air-train", "--nnodes", "x"},
                               {});
  CHECK(o.nnodes == 2);
  CHECK(o.node_rank == 1);
  CHECK(o.nproc_per_node == "4");
  CHECK(o.master_addr == "10.0.0.1");
  CHECK(o.master_port == 1234);
  CHECK(o.tee == 3);
  CHECK(o.command == std::vector<std::string>{"air-train", "--nnodes", "x"});

  auto dashdash = parse_torchrun_args({"--standalone", "--", "--weird-program"}, {});
  CHECK(dashdash.command == std::vector<std::string>{"--weird-program"});
  CHECK(dashdash.master_port == 0);  // picked when the ranks start
  CHECK(parse_torchrun_args({"--nnodes=3:3", "--prefix-output", "p"}, {}).nnodes == 3);
  CHECK(parse_torchrun_args({"--prefix-output", "p"}, {}).tee == 3);
}

TEST_CASE("torchrun takes PET_* defaults and lets the command line win") {
  Environment env{{"PET_NNODES", "2"},         {"PET_NODE_RANK", "1"},       {"PET_NPROC_PER_NODE", "8"},
                  {"PET_MASTER_ADDR", "host0"}, {"PET_MASTER_PORT", "29555"}};
  auto o = parse_torchrun_args({"prog"}, env);
  CHECK(o.nnodes == 2);
  CHECK(o.node_rank == 1);
  CHECK(o.nproc_per_node == "8");
  CHECK(o.master_addr == "host0");
  CHECK(o.master_port == 29555);
  CHECK(parse_torchrun_args({"--nproc_per_node", "2", "prog"}, env).nproc_per_node == "2");
}

TEST_CASE("torchrun rejects bad options with a hint") {
  auto message = [](std::vector<std::string> args, Environment env = {}) -> std::string {
    try {
      parse_torchrun_args(args, env);
    } catch (const air::Error& e) {
      CHECK(e.exit_code() == air::kExitUsage);
      return std::string(e.what()) + (e.hint().empty() ? "" : " | " + e.hint());
    }
    return "no error";
  };
  CHECK(message({"--nproc_per_nod", "2", "p"}) == "unknown option '--nproc_per_nod' | did you mean '--nproc_per_node'?");
  CHECK(message({"--nnodes", "2", "--node_rank", "2", "p"}) ==
        "--node_rank 2 is out of range for --nnodes 2 | node ranks run from 0 to nnodes - 1");
  CHECK(message({"--nnodes=1:4", "p"}) ==
        "elastic --nnodes ranges ('1:4') are not supported | give a fixed node count, e.g. --nnodes=2");
  CHECK(message({"--nproc_per_node", "many", "p"}) == "--nproc_per_node must be an integer from 1 to 4096, got 'many'");
  CHECK(message({"--nnodes=2"}).rfind("no program given", 0) == 0);
  CHECK(message({"p"}, {{"PET_MASTER_PORT", "x"}}) ==
        "PET_MASTER_PORT: --master_port must be an integer from 0 to 65535, got 'x'");
}

TEST_CASE("torchrun counts GPUs from CUDA_VISIBLE_DEVICES for gpu and auto") {
  CHECK(air::launcher::count_local_gpus({{"CUDA_VISIBLE_DEVICES", "0,1,3"}}) == 3);
  CHECK(air::launcher::count_local_gpus({{"CUDA_VISIBLE_DEVICES", ""}}) == 0);
  CHECK(air::launcher::resolve_nproc("gpu", {{"CUDA_VISIBLE_DEVICES", "2,5"}}) == 2);
  CHECK(air::launcher::resolve_nproc("auto", {{"CUDA_VISIBLE_DEVICES", ""}}) == 1);
  CHECK(air::launcher::resolve_nproc("7", {}) == 7);
  CHECK_THROWS_AS(air::launcher::resolve_nproc("gpu", {{"CUDA_VISIBLE_DEVICES", "-1"}}), air::Error);
}

TEST_CASE("torchrun gives each rank torchrun's environment") {
  auto r = torchrun("--nnodes 2 --node_rank 1 --nproc_per_node 2 --master_addr 127.0.0.2 --master_port 29999",
                    "echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT "
                    "${CUDA_VISIBLE_DEVICES-unset} $OMP_NUM_THREADS",
                    "env -u CUDA_VISIBLE_DEVICES -u OMP_NUM_THREADS");
  CHECK(r.code == 0);
  CHECK(sorted_lines(r.output) == std::vector<std::string>{"2 0 4 2 1 127.0.0.2 29999 unset 1",
                                                           "3 1 4 2 1 127.0.0.2 29999 unset 1"});
}

TEST_CASE("torchrun prefixes each line with the rank when asked") {
  auto r = torchrun("--nproc_per_node 2 --tee 3", "printf 'a\\nb'; echo err >&2");
  CHECK(r.code == 0);
  CHECK(sorted_lines(r.output) == std::vector<std::string>{"[rank 0]: a", "[rank 0]: b", "[rank 0]: err",
                                                           "[rank 1]: a", "[rank 1]: b", "[rank 1]: err"});
}

TEST_CASE("torchrun stops every rank when one fails and exits with its code") {
  TempDir dir;
  // Ranks other than 3 would sleep for a minute; they must be stopped, not waited for.
  std::string script = "echo $$ > " + dir.path.string() +
                       "/pid.$RANK; if [ $RANK = 3 ]; then sleep 0.3; exit 7; fi; exec sleep 60";
  auto r = torchrun("--nnodes=2 --node_rank=1 --nproc_per_node=2 --grace_period=5", script);
  CHECK(r.code == 7);
  CHECK(r.output == "air-torchrun: rank 3 (local 1) exited with code 7; stopped the other ranks\n");
  std::ifstream in(dir.path / "pid.2");
  pid_t other = 0;
  in >> other;
  REQUIRE(other > 0);
  CHECK(::kill(other, 0) != 0);  // gone
}

TEST_CASE("torchrun reports a rank killed by a signal") {
  auto r = torchrun("--nproc_per_node=1", "kill -SEGV $$");
  CHECK(r.code == 139);
  CHECK(r.output == "air-torchrun: rank 0 (local 0) was killed by SIGSEGV\n");
}

TEST_CASE("torchrun forwards SIGTERM to the ranks") {
  TempDir dir;
  std::string script = "trap 'echo stopped > " + dir.path.string() +
                       "/term.$RANK; exit 0' TERM; touch " + dir.path.string() + "/up.$RANK; sleep 60 & wait";
  pid_t pid = fork();
  if (pid == 0) {
    std::string bin = std::string(AIR_BIN_DIR) + "/air-torchrun";
    execl(bin.c_str(), bin.c_str(), "--nproc_per_node", "2", "bash", "-c", script.c_str(), nullptr);
    _exit(127);
  }
  for (int i = 0; i < 200 && !(std::filesystem::exists(dir.path / "up.0") &&
                               std::filesystem::exists(dir.path / "up.1"));
       ++i)
    usleep(20000);
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WEXITSTATUS(status) == 143);
  CHECK(std::filesystem::exists(dir.path / "term.0"));
  CHECK(std::filesystem::exists(dir.path / "term.1"));
}

TEST_CASE("torchrun names a program that does not exist") {
  std::string cmd = std::string(AIR_BIN_DIR) + "/air-torchrun --nproc_per_node 2 no-such-program-air 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[512] = {};
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  int status = pclose(p);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(std::string(buf, n) == "air-torchrun: error: program 'no-such-program-air' was not found on PATH\n");
}
