// Starting a child process and finding a program on PATH: the one home for both (the local backend's node
// agents and the Slurm client commands in the server; the agent's commands, air-torchrun's ranks and the
// Python environment set-up in the launcher). Everything exec needs is prepared before fork; between fork and
// exec the child makes async-signal-safe calls only, so a threaded caller is safe.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.h"

namespace air {

// The value of NAME in an environment given as "NAME=value" strings; nullopt when it is not there.
std::optional<std::string> env_entry(const std::vector<std::string>& env, std::string_view name);

// The file exec would run for `program`: `program` itself when it names a path (has a '/'), else the first
// executable regular file of that name in the colon-separated `path` (an empty entry is "."); "" when none.
// `path` nullopt: this process's $PATH, or /usr/local/bin:/usr/bin:/bin when unset.
std::string find_on_path(const std::string& program, std::optional<std::string> path = std::nullopt);

// How a child is started. The caller resolves the program (find_on_path) and keeps its own message for one
// that is not found.
struct SpawnSpec {
  std::string path;                                // the executable, as find_on_path returned it
  std::vector<std::string> argv;                   // argv[0] included
  std::optional<std::vector<std::string>> env;     // the whole environment; nullopt: this process's
  std::string cwd;                                 // empty: inherit
  enum class Group { kSame, kNewGroup, kNewSession } group = Group::kSame;
  int stdin_fd = -1;   // -1: /dev/null
  int stdout_fd = -1;  // -1: inherit
  int stderr_fd = -1;  // -1: inherit
  // The child's signal mask; nullptr: nothing blocked. SIGPIPE is always back to its default (a workspace or
  // agent ignores it; `yes | head` needs it).
  const sigset_t* signal_mask = nullptr;
  bool reset_signal_handlers = false;   // every handler back to SIG_DFL (the agent installs several)
  bool ignore_stop_signals = false;     // SIGTERM, SIGINT, SIGHUP start ignored (a wrapper that must outlive them)
  bool close_other_fds = false;         // close every fd above 2 (libcurl's sockets are not close-on-exec)
  bool die_with_parent = false;         // SIGKILL when the parent dies (PR_SET_PDEATHSIG), checked at once too
  void (*in_child)() = nullptr;         // an async-signal-safe step run in the child before the redirections
  // A failure after fork (changing directory, exec): nullptr reports it to the parent, whose spawn_process
  // throws SpawnError; a message makes the child write it on its stderr and exit 127 instead, as a shell does.
  const char* exec_failure_message = nullptr;
};

// Why a child could not be started: "cannot start the command: <stage> [<what>]: <strerror>".
struct SpawnError : Error {
  SpawnError(std::string message, int stage, int err) : Error(std::move(message)), stage(stage), err(err) {}
  int stage;  // 0 fork, 1 process group or session, 2 redirecting stdio, 3 changing directory, 4 exec
  int err;    // errno
};

// Forks and execs; the child's pid. Throws SpawnError (see SpawnSpec::exec_failure_message).
pid_t spawn_process(const SpawnSpec& spec);

// The exit code a shell would show for a wait status: the code, or 128 + signal number.
int exit_code_from_wait_status(int status);

}  // namespace air
