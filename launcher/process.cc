// ChildProcess: fork/exec into a new process group, pipes for stdout/stderr, and the guardian.
// Between fork and exec only async-signal-safe calls are made: the agent is multi-threaded.
#include "launcher/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "core/base/host.h"
#include "core/base/process.h"

namespace air::launcher {

namespace {

// The guardian: waits for EOF on its pipe (the agent is gone: every copy of the write end is closed),
// then terminates the group it belongs to. It ignores SIGTERM so that the agent's own SIGTERM of the
// group does not take it down before the command.
[[noreturn]] void guardian_main(int read_fd, pid_t pgid, long grace_ms) {
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &ign, nullptr);
  sigaction(SIGINT, &ign, nullptr);
  sigaction(SIGHUP, &ign, nullptr);
  sigaction(SIGPIPE, &ign, nullptr);
  if (setpgid(0, pgid) != 0) _exit(0);  // the group is already gone
  if (read_fd > 0) close_range(0, read_fd - 1, 0);
  close_range(read_fd + 1, ~0U, 0);
  char byte;
  while (true) {
    ssize_t n = read(read_fd, &byte, 1);
    if (n == 0) break;
    if (n < 0 && errno != EINTR) break;
  }
  kill(-pgid, SIGTERM);
  struct timespec ts {grace_ms / 1000, (grace_ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  kill(-pgid, SIGKILL);  // this kills the guardian too
  _exit(0);
}

}  // namespace

std::vector<pid_t> process_group_members(pid_t pgid) {
  std::vector<pid_t> out;
  // No process left in the group at all (zombies count): no need to read the stat of every process on the
  // machine (~1,000 files here, several times per node at its end).
  if (::kill(-pgid, 0) != 0 && errno == ESRCH) return out;
  for (const ProcStat& p : list_processes())
    if (p.pgrp == pgid && !p.gone()) out.push_back(static_cast<pid_t>(p.pid));
  return out;
}

ChildProcess::ChildProcess(const SpawnOptions& o) {
  if (o.argv.empty()) throw Error("cannot start a command without a program");
  std::string path = find_on_path(o.argv[0], env_entry(o.env, "PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
  if (path.empty()) throw Error("cannot start '" + o.argv[0] + "': not found on PATH");
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw Error(std::string("cannot create pipes for the command: ") + std::strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    int e = errno;
    close(out[0]);
    close(out[1]);
    throw Error(std::string("cannot create pipes for the command: ") + std::strerror(e));
  }
  SpawnSpec spec;
  spec.path = path;
  spec.argv = o.argv;
  spec.env = o.env;
  spec.cwd = o.cwd;
  spec.group = SpawnSpec::Group::kNewGroup;
  spec.stdout_fd = out[1];
  spec.stderr_fd = err[1];
  spec.reset_signal_handlers = true;
  spec.ignore_stop_signals = o.wrapped;
  // Nothing of the agent's leaks into the command: no socket to the workspace, no spool file.
  spec.close_other_fds = true;
  pid_t pid;
  try {
    pid = spawn_process(spec);
  } catch (const SpawnError&) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    throw;
  }
  close(out[1]);
  close(err[1]);
  pid_ = pid;
  exit_fd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1 where the kernel has none: polled instead
  out_fd_ = out[0];
  err_fd_ = err[0];
  // Bigger pipes mean fewer wake-ups for a chatty command (best effort; capped by fs.pipe-max-size).
  fcntl(out_fd_, F_SETPIPE_SZ, 1 << 20);
  fcntl(err_fd_, F_SETPIPE_SZ, 1 << 20);
  fcntl(out_fd_, F_SETFL, fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
  fcntl(err_fd_, F_SETFL, fcntl(err_fd_, F_GETFL) | O_NONBLOCK);
  want_guardian_ = o.guardian;
  guardian_grace_ = o.guardian_grace;
  if (!o.guardian_later) start_guardian();
}

void ChildProcess::start_guardian() {
  if (!want_guardian_ || guardian_ > 0 || pid_ < 0 || group_killed_) return;
  want_guardian_ = false;
  int gp[2];
  if (pipe2(gp, O_CLOEXEC) != 0) return;  // no guardian; the destructor still cleans up
  pid_t g = fork();
  if (g == 0) {
    close(gp[1]);
    guardian_main(gp[0], pid_, static_cast<long>(guardian_grace_.count()));
  }
  close(gp[0]);
  if (g < 0) {
    close(gp[1]);
    return;
  }
  setpgid(g, pid_);
  guardian_ = g;
  guardian_pipe_ = gp[1];
}

ChildProcess::~ChildProcess() {
  kill_group_and_reap();
  close_stdout();
  close_stderr();
  if (exit_fd_ >= 0) close(exit_fd_);
}

void ChildProcess::close_stdout() {
  if (out_fd_ >= 0) close(out_fd_);
  out_fd_ = -1;
}

void ChildProcess::close_stderr() {
  if (err_fd_ >= 0) close(err_fd_);
  err_fd_ = -1;
}

std::optional<int> ChildProcess::try_wait() {
  if (status_ || pid_ < 0) return status_;
  int st = 0;
  pid_t r;
  do r = waitpid(pid_, &st, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == pid_) status_ = st;
  return status_;
}

void ChildProcess::signal_group(int sig) {
  if (pid_ > 0 && !group_killed_) kill(-pid_, sig);
}

std::vector<pid_t> ChildProcess::members() const {
  if (pid_ < 0 || group_killed_) return {};
  auto all = process_group_members(pid_);
  std::erase(all, guardian_);
  return all;
}

void ChildProcess::kill_group_and_reap() {
  if (pid_ < 0 || group_killed_) return;
  kill(-pid_, SIGKILL);
  group_killed_ = true;
  if (!status_) {
    int st = 0;
    pid_t r;
    do r = waitpid(pid_, &st, 0);
    while (r < 0 && errno == EINTR);
    if (r == pid_) status_ = st;
  }
  if (guardian_pipe_ >= 0) close(guardian_pipe_);
  guardian_pipe_ = -1;
  if (guardian_ > 0) {
    int st;
    while (waitpid(guardian_, &st, 0) < 0 && errno == EINTR) {
    }
    guardian_ = -1;
  }
  // A PID namespace's processes (the run sandbox) die after its init, asynchronously: wait, briefly, until
  // none of the group is left, so that "done" means gone.
  for (int i = 0; i < 400 && !process_group_members(pid_).empty(); ++i) {
    kill(-pid_, SIGKILL);
    struct timespec ts {0, 5 * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace air::launcher
