// spawn_process and find_on_path (core/base/process.h).
#include "core/base/process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

extern char** environ;

namespace air {

namespace {

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool executable_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

const char* stage_name(int stage) {
  switch (stage) {
    case 0: return "fork";
    case 1: return "setpgid";
    case 2: return "redirecting stdio";
    case 3: return "changing to the working directory";
    default: return "exec";
  }
}

// Runs in the forked child: only async-signal-safe calls. Never returns.
[[noreturn]] void child_main(const SpawnSpec& s, char** argv, char** envp, int devnull, int report_fd,
                             pid_t parent) {
  int stage = 1;
  if (s.reset_signal_handlers) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  }
  ::signal(SIGPIPE, SIG_DFL);
  if (s.ignore_stop_signals) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &ign, nullptr);
  }
  if (s.signal_mask != nullptr) {
    ::sigprocmask(SIG_SETMASK, s.signal_mask, nullptr);
  } else {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
  }
  if (s.group == SpawnSpec::Group::kNewGroup && ::setpgid(0, 0) != 0) goto fail;
  if (s.group == SpawnSpec::Group::kNewSession && ::setsid() < 0) goto fail;
  if (s.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(137);  // the parent died before the line above
  }
  if (s.in_child != nullptr) s.in_child();
  stage = 2;
  if (::dup2(s.stdin_fd >= 0 ? s.stdin_fd : devnull, 0) < 0) goto fail;
  if (s.stdout_fd >= 0 && ::dup2(s.stdout_fd, 1) < 0) goto fail;
  if (s.stderr_fd >= 0 && ::dup2(s.stderr_fd, 2) < 0) goto fail;
  stage = 3;
  if (!s.cwd.empty() && ::chdir(s.cwd.c_str()) != 0) goto fail;
  stage = 4;
  if (s.close_other_fds) {  // the report pipe closes itself on a successful exec
    if (report_fd > 3) ::close_range(3, static_cast<unsigned>(report_fd) - 1, 0);
    ::close_range(static_cast<unsigned>(report_fd) + 1, ~0U, 0);
  }
  ::execve(s.path.c_str(), argv, envp);
fail:
  if (s.exec_failure_message != nullptr) {
    (void)!::write(2, s.exec_failure_message, std::strlen(s.exec_failure_message));
  } else {
    int report[2] = {stage, errno};
    (void)!::write(report_fd, report, sizeof report);
  }
  ::_exit(127);
}

struct ChildArgs {
  const SpawnSpec* spec;
  char** argv;
  char** envp;
  int devnull;
  int report_fd;
  pid_t parent;
};

// AddressSanitizer cannot follow a child running on a stack of our own (it warns in the child's output, which
// the commands' tests read): sanitizer builds start children with plain fork().
#if defined(__SANITIZE_ADDRESS__)
#define AIR_SPAWN_WITH_FORK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AIR_SPAWN_WITH_FORK 1
#endif
#endif
#ifndef AIR_SPAWN_WITH_FORK
#define AIR_SPAWN_WITH_FORK 0
#endif

// The clone()d child: it shares the parent's memory until execve, so a handler of the parent's must never
// run here. Signals arrive blocked; each handled one goes back to SIG_DFL (as execve would do anyway;
// ignored ones stay ignored across it) before child_main sets the child's mask.
int child_entry(void* p) {
  const auto* a = static_cast<const ChildArgs*>(p);
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction sa {};
    if (::sigaction(sig, nullptr, &sa) != 0 || sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN) continue;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
  }
  child_main(*a->spec, a->argv, a->envp, a->devnull, a->report_fd, a->parent);
}

}  // namespace

std::optional<std::string> env_entry(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& e : env)
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=')
      return e.substr(name.size() + 1);
  return std::nullopt;
}

std::string find_on_path(const std::string& program, std::optional<std::string> path) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) return program;
  if (!path) {
    const char* p = std::getenv("PATH");
    path = p != nullptr ? p : "/usr/local/bin:/usr/bin:/bin";
  }
  size_t start = 0;
  while (start <= path->size()) {
    size_t end = path->find(':', start);
    if (end == std::string::npos) end = path->size();
    std::string dir = path->substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

pid_t spawn_process(const SpawnSpec& s) {
  std::vector<std::string> args = s.argv;
  std::vector<std::string> env_store;
  if (s.env) {
    env_store = *s.env;
  } else {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env_store.emplace_back(*e);
  }
  auto argv = c_strings(args);
  auto envp = c_strings(env_store);
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int report[2] = {-1, -1};
  if (devnull < 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    int e = errno;
    if (devnull >= 0) ::close(devnull);
    throw SpawnError(std::string("cannot start the command: cannot create a pipe: ") + std::strerror(e), 0, e);
  }
  // vfork-style (CLONE_VM | CLONE_VFORK, as posix_spawn does): no copy of this process's page tables, and
  // this thread sleeps until the child has exec'd or failed, handing it the CPU; a fork()ed child of the
  // agent or the workspace waited for a scheduler slot of its own (on a loaded 2-core machine, ms each).
  // Every signal stays blocked around the clone so that no handler of ours runs on the shared memory; the
  // child sets its own mask (child_main) after putting handled signals back to SIG_DFL.
  ChildArgs child{&s, argv.data(), envp.data(), devnull, report[1], ::getpid()};
  constexpr size_t kChildStack = 64 * 1024;
  std::unique_ptr<char[]> stack(new char[kChildStack]);
  sigset_t all, old_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old_mask);
#if AIR_SPAWN_WITH_FORK
  pid_t pid = ::fork();
  if (pid == 0) child_entry(&child);
#else
  pid_t pid = ::clone(child_entry, stack.get() + kChildStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
#endif
  int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::close(devnull);
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    throw SpawnError(std::string("cannot start the command: fork: ") + std::strerror(fork_errno), 0, fork_errno);
  }
  // Also done by the child; whichever runs first wins, the other fails harmlessly (the caller may signal the
  // group at once).
  if (s.group == SpawnSpec::Group::kNewGroup) ::setpgid(pid, pid);
  int failure[2] = {0, 0};
  ssize_t n;
  do n = ::read(report[0], failure, sizeof failure);
  while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n > 0) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    std::string where = failure[0] == 3 ? " " + s.cwd : failure[0] == 4 ? " " + s.path : "";
    throw SpawnError("cannot start the command: " + std::string(stage_name(failure[0])) + where + ": " +
                         std::strerror(failure[1]),
                     failure[0], failure[1]);
  }
  return pid;
}

int exit_code_from_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace air
