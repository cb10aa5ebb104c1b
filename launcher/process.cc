// ChildProcess: fork/exec into a new process group, pipes for stdout/stderr, and the guardian.
// Between fork and exec only async-signal-safe calls are made: the agent is multi-threaded.
#include "launcher/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "core/base/host.h"

namespace air::launcher {

namespace {

std::string env_value(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env) {
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
      return e.substr(name.size() + 1);
    }
  }
  return "";
}

std::string resolve_program(const std::string& program, const std::vector<std::string>& env) {
  if (program.find('/') != std::string::npos) return program;
  std::string path = env_value(env, "PATH");
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw Error("cannot start '" + program + "': not found on PATH");
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the forked child before exec. Reports failures as {stage, errno} on err_fd.
[[noreturn]] void exec_child(const char* path, char** argv, char** envp, const char* cwd, int devnull, int out,
                             int err, int err_fd, bool wrapped) {
  int stage = 0;
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  if (wrapped)
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &ign, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (setpgid(0, 0) != 0) goto fail;
  stage = 1;
  if (dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) goto fail;
  stage = 2;
  if (cwd && chdir(cwd) != 0) goto fail;
  // Nothing of the agent's leaks into the command: no socket to the workspace, no spool file (libcurl's
  // sockets are not opened close-on-exec). err_fd closes itself on a successful exec.
  if (err_fd > 3) close_range(3, static_cast<unsigned>(err_fd) - 1, 0);
  close_range(static_cast<unsigned>(err_fd) + 1, ~0U, 0);
  stage = 3;
  execve(path, argv, envp);
fail:
  int report[2] = {stage, errno};
  ssize_t ignored = write(err_fd, report, sizeof report);
  (void)ignored;
  _exit(127);
}

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

const char* stage_name(int stage) {
  switch (stage) {
    case 0: return "setpgid";
    case 1: return "redirecting stdio";
    case 2: return "changing to the working directory";
    default: return "exec";
  }
}

}  // namespace

int exit_code_from_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::vector<pid_t> process_group_members(pid_t pgid) {
  std::vector<pid_t> out;
  for (const ProcStat& p : list_processes())
    if (p.pgrp == pgid && !p.gone()) out.push_back(static_cast<pid_t>(p.pid));
  return out;
}

ChildProcess::ChildProcess(const SpawnOptions& o) {
  if (o.argv.empty()) throw Error("cannot start a command without a program");
  std::string path = resolve_program(o.argv[0], o.env);
  auto argv = c_strings(o.argv);
  auto envp = c_strings(o.env);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out[2], err[2], report[2];
  if (devnull < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
    throw Error(std::string("cannot create pipes for the command: ") + std::strerror(errno));
  }
  pid_t pid = fork();
  if (pid < 0) throw Error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    exec_child(path.c_str(), argv.data(), envp.data(), o.cwd.empty() ? nullptr : o.cwd.c_str(), devnull, out[1],
               err[1], report[1], o.wrapped);
  }
  setpgid(pid, pid);  // also done by the child; whichever runs first wins, the other fails harmlessly
  close(devnull);
  close(out[1]);
  close(err[1]);
  close(report[1]);
  int failure[2] = {0, 0};
  ssize_t n;
  do n = read(report[0], failure, sizeof failure);
  while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n > 0) {
    close(out[0]);
    close(err[0]);
    int st;
    waitpid(pid, &st, 0);
    std::string where = failure[0] == 2 ? " " + o.cwd : failure[0] == 3 ? " " + path : "";
    throw Error("cannot start the command: " + std::string(stage_name(failure[0])) + where + ": " +
                std::strerror(failure[1]));
  }
  pid_ = pid;
  out_fd_ = out[0];
  err_fd_ = err[0];
  // Bigger pipes mean fewer wake-ups for a chatty command (best effort; capped by fs.pipe-max-size).
  fcntl(out_fd_, F_SETPIPE_SZ, 1 << 20);
  fcntl(err_fd_, F_SETPIPE_SZ, 1 << 20);
  fcntl(out_fd_, F_SETFL, fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
  fcntl(err_fd_, F_SETFL, fcntl(err_fd_, F_GETFL) | O_NONBLOCK);
  if (!o.guardian) return;
  int gp[2];
  if (pipe2(gp, O_CLOEXEC) != 0) return;  // no guardian; the destructor still cleans up
  pid_t g = fork();
  if (g == 0) {
    close(gp[1]);
    guardian_main(gp[0], pid_, static_cast<long>(o.guardian_grace.count()));
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
