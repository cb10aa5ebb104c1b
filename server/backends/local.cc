// Starting and stopping node agents as local processes.
#include "server/backends/local.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "core/base/host.h"
#include "core/base/process.h"

extern char** environ;

namespace air::server {

int detect_local_gpus() {
  if (const char* v = std::getenv("AIR_LOCAL_GPUS"); v && *v) return std::atoi(v);
  FILE* p = ::popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return 0;
  int n = 0;
  char line[512];
  while (std::fgets(line, sizeof line, p))
    if (std::strncmp(line, "GPU ", 4) == 0) ++n;
  ::pclose(p);
  return n;
}

namespace {

// The new session's scheduling weight (Linux autogroups: the CPU is shared between sessions first, then
// between the threads of each). A local workspace shares its machine with every node it runs, and one
// workspace serves them all: at equal weight, 8 nodes printing at full speed on 2 cores left the
// workspace a tenth of the CPU, and a quiet node's line took 0.2-0.45 s to reach `air logs --follow`
// (p95). At autogroup nice 3 a node's session weighs half the workspace's: p95 ~0.1-0.16 s, total log
// throughput within the noise of before (bench/logs.sh; nice 5 gave the same latency for ~15% of the
// throughput: docs/performance.md). The node's processes keep nice 0 among themselves, and a node alone on
// the machine runs as before (weights matter only while the CPUs are contended). Where autogroups are off
// or the processes sit in a systemd/cgroup scope, the file is missing or ignored and nothing changes.
// Runs between fork and exec: system calls only.
constexpr char kNodeSessionNice[] = "3";

void lighten_session() {
  int fd = ::open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  [[maybe_unused]] ssize_t n = ::write(fd, kNodeSessionNice, sizeof kNodeSessionNice - 1);
  ::close(fd);
}

}  // namespace

int LocalBackend::start_node(const NodeLaunch& l) {
  std::filesystem::create_directories(l.workdir);
  // Everything exec needs is built before fork: the child of a threaded process may only call
  // async-signal-safe functions.
  std::vector<std::string> args = {air_binary_, "node", "--server", l.server_url, "--run", l.run_id,
                                   "--attempt", std::to_string(l.attempt), "--node", std::to_string(l.rank),
                                   "--workdir", l.workdir, "--bin-dir", l.bin_dir};
  if (!l.run_as.empty()) args.insert(args.end(), {"--run-as", l.run_as});
  if (l.require_sandbox) args.push_back("--require-sandbox");
  if (l.sandbox_checked) args.push_back("--sandbox-checked");
  if (!l.gpus.empty()) {
    args.push_back("--gpus");
    args.push_back(l.gpus);
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "AIR_NODE_TOKEN=", 15) != 0 && std::strncmp(*e, "AIR_TOKEN=", 10) != 0)
      env.emplace_back(*e);
  env.push_back("AIR_NODE_TOKEN=" + l.token);
  int log = ::open(l.agent_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  SpawnSpec spec;
  spec.path = args[0];
  spec.argv = std::move(args);
  spec.env = std::move(env);
  spec.cwd = l.workdir;
  spec.group = SpawnSpec::Group::kNewSession;
  spec.in_child = lighten_session;
  spec.stdout_fd = log;
  spec.stderr_fd = log;
  pid_t pid;
  try {
    pid = spawn_process(spec);
  } catch (const SpawnError& e) {
    if (log >= 0) ::close(log);
    throw Error(std::string("cannot start the node agent: ") + e.what());
  }
  if (log >= 0) ::close(log);
  return pid;
}

bool LocalBackend::agent_alive(int pid) {
  if (pid <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == pid) return false;  // it exited and is now reaped
  if (r == 0) return true;     // our child, still running
  // Not our child (the workspace restarted): ask the kernel. A zombie of someone else counts as gone.
  if (::kill(pid, 0) != 0) return false;
  auto st = read_proc_stat(pid);
  return st && !st->gone();
}

std::vector<int> session_members(int sid) {
  std::vector<int> out;
  for (const ProcStat& p : list_processes())
    if (p.session == sid && !p.gone()) out.push_back(p.pid);
  return out;
}

void LocalBackend::kill_node(int pid) {
  if (pid <= 0) return;
  // The agent is its session's leader; its command runs in another process group of the same session,
  // so killing by session catches both (and anything they started that did not setsid itself).
  for (int member : session_members(pid)) ::kill(member, SIGKILL);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, WNOHANG);
}

}  // namespace air::server
