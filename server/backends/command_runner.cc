// run_command: fork/exec with pipes and a deadline. Everything the child needs is prepared before fork,
// because the workspace is multi-threaded and the child may only call async-signal-safe functions.
#include "server/backends/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include "core/base/error.h"
#include "core/base/process.h"

extern char** environ;

namespace air::server {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kCap = 1 << 20;

std::vector<std::string> merged_env(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string s(*e);
    bool replaced = false;
    for (const auto& x : extra) {
      auto eq = x.find('=');
      std::string name = eq == std::string::npos ? x : x.substr(0, eq);
      if (s.size() > name.size() && s[name.size()] == '=' && s.compare(0, name.size(), name) == 0) replaced = true;
    }
    if (!replaced) env.push_back(std::move(s));
  }
  for (const auto& x : extra)
    if (x.find('=') != std::string::npos) env.push_back(x);
  return env;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv_in, std::chrono::milliseconds timeout,
                          const std::vector<std::string>& extra_env) {
  if (argv_in.empty()) throw Error("run_command: no command");
  std::string exe = find_on_path(argv_in[0]);
  if (exe.empty()) throw Error(fmt::format("{} not found on PATH", argv_in[0]), "install the Slurm client commands");
  int out_p[2], err_p[2];
  if (::pipe2(out_p, O_CLOEXEC) != 0) throw Error("cannot create a pipe");
  if (::pipe2(err_p, O_CLOEXEC) != 0) {
    ::close(out_p[0]);
    ::close(out_p[1]);
    throw Error("cannot create a pipe");
  }
  SpawnSpec spec;
  spec.path = exe;
  spec.argv = argv_in;
  spec.env = merged_env(extra_env);
  spec.group = SpawnSpec::Group::kNewGroup;
  spec.stdout_fd = out_p[1];
  spec.stderr_fd = err_p[1];
  spec.exec_failure_message = "";  // exits 127, as a shell would
  pid_t pid;
  try {
    pid = spawn_process(spec);
  } catch (const SpawnError&) {
    for (int fd : {out_p[0], out_p[1], err_p[0], err_p[1]}) ::close(fd);
    throw Error(fmt::format("cannot run {}: fork failed", argv_in[0]));
  }
  ::close(out_p[1]);
  ::close(err_p[1]);
  CommandResult r;
  auto deadline = Clock::now() + timeout;
  int fds[2] = {out_p[0], err_p[0]};
  std::string* sinks[2] = {&r.out, &r.err};
  char buf[8192];
  while (fds[0] >= 0 || fds[1] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    int rc = ::poll(p, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (rc < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && rc > 0; ++i) {
      if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i], buf, sizeof buf);
      if (n > 0) {
        if (sinks[i]->size() < kCap) sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i]);
        fds[i] = -1;
      }
    }
  }
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
  int status = 0;
  if (r.timed_out) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return r;
  }
  // Both pipes are closed: the command is exiting; wait for it, but never past the deadline.
  while (true) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return r;
    if (Clock::now() >= deadline) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return r;
    }
    ::usleep(2000);
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  return r;
}

std::string describe_failure(const std::string& name, const CommandResult& r, std::chrono::milliseconds timeout) {
  if (r.timed_out)
    return fmt::format("{} did not answer within {} s (is the Slurm controller up?)", name, timeout.count() / 1000);
  std::string msg = r.err.empty() ? r.out : r.err;
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  if (auto nl = msg.find('\n'); nl != std::string::npos) msg = msg.substr(0, nl);
  if (r.exit_code == 127 && msg.empty()) msg = "could not be executed";
  return fmt::format("{} exited with code {}{}", name, r.exit_code, msg.empty() ? "" : ": " + msg);
}

}  // namespace air::server
