// A child command in its own process group, with its stdout/stderr on pipes and a guardian process that
// kills the whole group if the agent dies without cleaning up (SIGKILL, crash): no orphans on any path.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/base/process.h"

namespace air::launcher {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is resolved on the PATH of `env` when it has no '/'
  std::vector<std::string> env;   // the whole environment, "NAME=value"
  std::string cwd;                // empty: inherit
  bool guardian = true;           // fork a guardian that kills the group when this process dies
  // The caller forks it with start_guardian() (the agent: after its RUNNING report, which then does not wait
  // for a fork of the agent; the sandbox's bwrap dies with the agent meanwhile, --die-with-parent).
  bool guardian_later = false;
  // argv starts with a wrapper (the run sandbox) that must outlive the SIGTERM/SIGINT/SIGHUP the group gets
  // on a stop, so that the command has its grace period: it starts with them ignored, and restores them for
  // the command (core/sandbox/sandbox.h). SIGKILL still ends everything.
  bool wrapped = false;
  std::chrono::milliseconds guardian_grace{5000};
};

// The exit code a shell would show (core/base/process.h).
using air::exit_code_from_wait_status;

// Live members of a process group (zombies excluded), read from /proc.
std::vector<pid_t> process_group_members(pid_t pgid);

class ChildProcess {
 public:
  // Throws air::Error when the command cannot be started (missing cwd, no such program).
  explicit ChildProcess(const SpawnOptions& options);
  ~ChildProcess();  // kills the whole group (SIGKILL) if it is still there, reaps everything
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  pid_t pgid() const { return pid_; }
  pid_t guardian_pid() const { return guardian_; }
  // Read ends of the command's stdout and stderr (non-blocking); -1 once closed with close_stdout/err.
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  void close_stdout();
  void close_stderr();
  // Readable (POLLIN) once the group leader has exited (a pidfd); -1 where the kernel has none.
  int exit_fd() const { return exit_fd_; }

  // Forks the guardian if the options asked for one and it does not exist yet (the constructor does, unless
  // guardian_later).
  void start_guardian();

  // Reaps the group leader if it has exited; returns its wait status.
  std::optional<int> try_wait();
  std::optional<int> wait_status() const { return status_; }

  // Sends sig to every process of the group (the guardian ignores SIGTERM/SIGINT/SIGHUP).
  void signal_group(int sig);
  // Command processes still alive in the group (the guardian is not counted).
  std::vector<pid_t> members() const;
  // SIGKILLs the group (guardian included) and reaps the leader and the guardian. Idempotent.
  void kill_group_and_reap();

 private:
  pid_t pid_ = -1;
  pid_t guardian_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  int exit_fd_ = -1;
  bool want_guardian_ = false;
  std::chrono::milliseconds guardian_grace_{5000};
  int guardian_pipe_ = -1;  // write end; its EOF tells the guardian the agent is gone
  std::optional<int> status_;
  bool group_killed_ = false;
};

}  // namespace air::launcher
