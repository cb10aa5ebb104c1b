// air-torchrun's supervisor: forks one process per local rank, relays (and optionally prefixes) their
// output, forwards signals, and stops every rank when one fails. One thread, one poll loop over a
// signalfd and the ranks' pipes, so there is no race between a child exiting and a signal arriving.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/host.h"
#include "core/base/process.h"
#include "launcher/torchrun/torchrun.h"

namespace air::launcher {
namespace {

using Clock = std::chrono::steady_clock;

struct Stream {
  int fd = -1;         // read end of the rank's pipe; -1 once closed
  int target = 1;      // where prefixed lines go: 1 stdout, 2 stderr
  std::string partial;  // bytes after the last newline
};

struct Rank {
  int local = 0;
  int global = 0;
  pid_t pid = -1;
  bool running = false;
  Stream streams[2];
};

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 100);
        continue;
      }
      return;  // a closed stdout must not stop the supervision
    }
    data += n, size -= static_cast<size_t>(n);
  }
}

void say(const std::string& message) {
  std::string line = "air-torchrun: " + message + "\n";
  write_all(2, line.data(), line.size());
}

void emit_lines(const Rank& rank, Stream& s, bool flush) {
  std::string prefix = "[rank " + std::to_string(rank.global) + "]: ";
  size_t start = 0, nl;
  std::string out;
  while ((nl = s.partial.find('\n', start)) != std::string::npos) {
    out += prefix;
    out.append(s.partial, start, nl - start + 1);
    start = nl + 1;
  }
  s.partial.erase(0, start);
  if (flush && !s.partial.empty()) out += prefix + s.partial + "\n", s.partial.clear();
  if (!out.empty()) write_all(s.target, out.data(), out.size());
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGPIPE: return "SIGPIPE";
    default: return nullptr;
  }
}

std::string describe_signal(int sig) {
  const char* name = signal_name(sig);
  return name ? name : "signal " + std::to_string(sig);
}

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The argv to exec: *.py goes through python3 like torchrun; a bare name must be on PATH.
std::vector<std::string> resolve_command(const TorchrunOptions& o) {
  std::vector<std::string> argv = o.command;
  const std::string& program = argv[0];
  bool python = !o.no_python && program.size() > 3 && program.ends_with(".py");
  if (python) {
    argv.insert(argv.begin(), {"python3", "-u"});
    return argv;
  }
  if (program.find('/') != std::string::npos) {
    if (!executable(program))
      throw usage_error("program '" + program + "' does not exist or is not executable");
    return argv;
  }
  if (!find_on_path(program).empty()) return argv;
  throw usage_error("program '" + program + "' was not found on PATH");
}

}  // namespace

class Supervisor {
 public:
  Supervisor(const TorchrunOptions& o, int nproc) : options_(o), nproc_(nproc) {}

  int run(const std::vector<std::string>& argv);

 private:
  void spawn(Rank& rank, const std::vector<std::string>& argv, const sigset_t& old_mask);
  void on_signal(int sig);
  void reap();
  void stop_running(int sig);
  void read_stream(Rank& rank, Stream& s);

  const TorchrunOptions& options_;
  int nproc_;
  std::vector<Rank> ranks_;
  int signal_fd_ = -1;
  int interrupted_ = 0;          // the signal air-torchrun received, if any
  int failed_ = -1;              // index of the first rank that failed
  int failed_code_ = 0;
  bool stopping_ = false;
  bool killed_ = false;
  Clock::time_point kill_at_{};
};

void Supervisor::spawn(Rank& rank, const std::vector<std::string>& argv, const sigset_t& old_mask) {
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  Environment extra = rank_environment(options_, nproc_, rank.local);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (!extra.count(key)) env_strings.push_back(kv);
  }
  if (nproc_ > 1 && !getenv("OMP_NUM_THREADS")) env_strings.push_back("OMP_NUM_THREADS=1");
  for (const auto& [k, v] : extra) env_strings.push_back(k + "=" + v);
  int pipes[2][2] = {{-1, -1}, {-1, -1}};
  for (int s = 0; s < 2; ++s)
    if (options_.tee & (1 << s)) {
      if (::pipe2(pipes[s], O_CLOEXEC) != 0) throw Error("cannot create a pipe: " + std::string(strerror(errno)));
    }
  SpawnSpec spec;
  spec.path = find_on_path(argv.at(0));
  if (spec.path.empty()) spec.path = argv[0];  // exec fails and says so
  spec.argv = argv;
  spec.env = std::move(env_strings);
  spec.group = SpawnSpec::Group::kNewGroup;  // its own group: stopping a rank stops whatever it started
  spec.die_with_parent = true;               // and it never outlives a killed air-torchrun
  spec.signal_mask = &old_mask;
  spec.stdin_fd = 0;                         // the ranks share air-torchrun's stdin
  spec.stdout_fd = pipes[0][1];
  spec.stderr_fd = pipes[1][1];
  spec.exec_failure_message = "air-torchrun: cannot execute the program\n";
  pid_t pid;
  try {
    pid = spawn_process(spec);
  } catch (const SpawnError& e) {
    for (auto& p : pipes)
      for (int fd : p)
        if (fd >= 0) ::close(fd);
    throw Error("cannot start rank " + std::to_string(rank.global) + ": " + strerror(e.err));
  }
  ::setpgid(pid, pid);
  rank.pid = pid;
  rank.running = true;
  for (int s = 0; s < 2; ++s) {
    if (pipes[s][1] < 0) continue;
    ::close(pipes[s][1]);
    ::fcntl(pipes[s][0], F_SETFL, O_NONBLOCK);
    rank.streams[s].fd = pipes[s][0];
    rank.streams[s].target = s + 1;
  }
}

void Supervisor::stop_running(int sig) {
  for (auto& r : ranks_)
    if (r.running) ::kill(-r.pid, sig);
  if (!stopping_) {
    stopping_ = true;
    kill_at_ = Clock::now() + std::chrono::milliseconds(static_cast<long>(options_.grace_seconds * 1000));
  }
}

void Supervisor::on_signal(int sig) {
  if (!interrupted_) interrupted_ = sig;
  stop_running(sig);
}

void Supervisor::reap() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      if (r.pid != pid) continue;
      r.running = false;
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code == 0 || stopping_ || failed_ >= 0) break;
      failed_ = static_cast<int>(i);
      failed_code_ = code;
      std::string what = WIFEXITED(status) ? "exited with code " + std::to_string(code)
                                           : "was killed by " + describe_signal(WTERMSIG(status));
      bool others = false;
      for (auto& o : ranks_) others = others || o.running;
      say("rank " + std::to_string(r.global) + " (local " + std::to_string(r.local) + ") " + what +
          (others ? "; stopped the other ranks" : ""));
      stop_running(SIGTERM);
      break;
    }
  }
}

void Supervisor::read_stream(Rank& rank, Stream& s) {
  char buf[65536];
  while (true) {
    ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.partial.append(buf, static_cast<size_t>(n));
      emit_lines(rank, s, false);
      continue;
    }
    if (n < 0 && (errno == EINTR)) continue;
    if (n < 0 && errno == EAGAIN) return;
    emit_lines(rank, s, true);  // EOF or error: the stream is done
    ::close(s.fd);
    s.fd = -1;
    return;
  }
}

int Supervisor::run(const std::vector<std::string>& argv) {
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&mask, sig);
  ::sigprocmask(SIG_BLOCK, &mask, &old_mask);
  signal_fd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) throw Error("signalfd failed: " + std::string(strerror(errno)));

  ranks_.resize(static_cast<size_t>(nproc_));
  for (int i = 0; i < nproc_; ++i) {
    ranks_[i].local = i;
    ranks_[i].global = options_.node_rank * nproc_ + i;
    try {
      spawn(ranks_[i], argv, old_mask);
    } catch (const Error&) {
      for (int j = 0; j < i; ++j) ::kill(-ranks_[j].pid, SIGKILL), ::waitpid(ranks_[j].pid, nullptr, 0);
      ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      throw;
    }
  }

  Clock::time_point drain_until{};
  while (true) {
    bool any_running = false, any_open = false;
    for (auto& r : ranks_) {
      any_running = any_running || r.running;
      for (auto& s : r.streams) any_open = any_open || s.fd >= 0;
    }
    if (!any_running && !any_open) break;
    auto now = Clock::now();
    if (!any_running) {
      // A rank's own children may hold its pipe open after it exits: drain briefly, then let go.
      if (drain_until == Clock::time_point{}) drain_until = now + std::chrono::seconds(2);
      if (now >= drain_until) break;
    }
    if (stopping_ && !killed_ && now >= kill_at_) {
      for (auto& r : ranks_)
        if (r.running) ::kill(-r.pid, SIGKILL);
      killed_ = true;
    }
    int timeout = -1;
    auto until = [&](Clock::time_point t) {
      long ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
      timeout = timeout < 0 ? static_cast<int>(std::max(0L, ms)) : std::min(timeout, static_cast<int>(std::max(0L, ms)));
    };
    if (stopping_ && !killed_) until(kill_at_);
    if (!any_running) until(drain_until);

    std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}};
    std::vector<std::pair<Rank*, Stream*>> owners{{nullptr, nullptr}};
    for (auto& r : ranks_)
      for (auto& s : r.streams)
        if (s.fd >= 0) fds.push_back({s.fd, POLLIN, 0}), owners.emplace_back(&r, &s);
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) throw Error("poll failed: " + std::string(strerror(errno)));
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents) read_stream(*owners[i].first, *owners[i].second);
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (::read(signal_fd_, &info, sizeof info) == sizeof info)
        if (static_cast<int>(info.ssi_signo) != SIGCHLD) on_signal(static_cast<int>(info.ssi_signo));
    }
    reap();
  }
  for (auto& r : ranks_)
    for (auto& s : r.streams)
      if (s.fd >= 0) emit_lines(r, s, true), ::close(s.fd), s.fd = -1;
  ::close(signal_fd_);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  if (interrupted_) {
    say("received " + describe_signal(interrupted_) + "; stopped the ranks");
    return 128 + interrupted_;
  }
  if (failed_ >= 0) return failed_code_;
  return kExitOk;
}

int run_torchrun(const TorchrunOptions& options) {
  TorchrunOptions o = options;
  Environment env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  int nproc = resolve_nproc(o.nproc_per_node, env);
  if (o.master_port == 0) {
    if (o.nnodes > 1)
      throw usage_error("--master_port 0 only works on one node", "give every node the same port");
    o.master_port = free_loopback_port();
    if (o.master_port == 0) throw Error("cannot pick a port for --standalone: " + std::string(strerror(errno)));
  }
  std::vector<std::string> argv = resolve_command(o);
  Supervisor supervisor(o, nproc);
  return supervisor.run(argv);
}

}  // namespace air::launcher
