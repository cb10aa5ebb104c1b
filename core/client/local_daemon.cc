// Starting, finding and stopping the local workspace daemon.
#include "core/client/local_daemon.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/client/client.h"
#include "core/base/error.h"

namespace air {

namespace fs = std::filesystem;

std::string daemon_info_path(const std::string& home) { return home + "/server.json"; }

std::optional<DaemonInfo> read_daemon_info(const std::string& home) {
  std::ifstream in(daemon_info_path(home));
  if (!in) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(in);
    DaemonInfo d;
    d.pid = j.value("pid", 0);
    d.port = j.value("port", 0);
    d.url = j.value("url", "");
    d.token = j.value("token", "");
    d.home = home;
    if (d.pid <= 0 || d.url.empty()) return std::nullopt;
    return d;
  } catch (const std::exception&) {
    return std::nullopt;  // a torn or foreign file: treat as no daemon
  }
}

void write_daemon_info(const std::string& home, const DaemonInfo& info) {
  std::string path = daemon_info_path(home), tmp = path + ".tmp" + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw Error("cannot write " + tmp);
  std::string body = nlohmann::json{{"pid", info.pid}, {"port", info.port}, {"url", info.url},
                                    {"token", info.token}, {"home", home}}
                         .dump(2) + "\n";
  bool ok = ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path);
  }
}

bool daemon_healthy(const DaemonInfo& info, long timeout_ms) {
  if (info.pid <= 0 || ::kill(info.pid, 0) != 0) return false;
  try {
    Client c(info.url, "");
    auto r = c.request("GET", "/api/air/v1/health", {}, {}, timeout_ms);
    if (r.status != 200) return false;
    return nlohmann::json::parse(r.body).value("pid", 0) == info.pid;
  } catch (const std::exception&) {
    return false;
  }
}

namespace {

std::string daemon_lock_path(const std::string& home) { return home + "/daemon.lock"; }

struct flock whole_file_lock(short type) {
  struct flock l {};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  return l;
}

}  // namespace

DaemonLock::~DaemonLock() {
  if (fd >= 0) ::close(fd);
}

DaemonLock lock_daemon_home(const std::string& home) {
  std::string path = daemon_lock_path(home);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("cannot create " + path, "check that " + home + " is writable");
  DaemonLock lock(fd);
  struct flock l = whole_file_lock(F_WRLCK);
  if (::fcntl(fd, F_OFD_SETLK, &l) != 0) {
    auto d = read_daemon_info(home);
    std::string who = d ? fmt::format(" (pid {}, {})", d->pid, d->url) : std::string();
    throw Error("another air server is already running for " + home + who,
                "use it, stop it with 'air server stop --home " + home + "', or give this one another --home");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) [[maybe_unused]] auto n = ::pwrite(fd, pid.data(), pid.size(), 0);
  return lock;
}

bool daemon_lock_held(const std::string& home) { return daemon_lock_holder(home) != 0; }

int daemon_lock_holder(const std::string& home) {
  int fd = ::open(daemon_lock_path(home).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock l = whole_file_lock(F_WRLCK);
  bool held = ::fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
  char buf[24] = {};
  ssize_t n = held ? ::pread(fd, buf, sizeof buf - 1, 0) : 0;
  ::close(fd);
  if (!held) return 0;
  int pid = n > 0 ? std::atoi(buf) : 0;
  return pid > 0 ? pid : -1;  // held, by a daemon that has not written its pid yet
}

std::string default_air_binary() {
  if (const char* d = std::getenv("AIR_BIN_DIR"); d && *d) return std::string(d) + "/air";
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "air";
  return (self.parent_path() / "air").string();
}

namespace {

// Double fork so the daemon is re-parented to init and lives in its own session: closing the terminal
// or killing the CLI does not take the workspace (and its runs) down.
void spawn_daemon(const std::string& home, const std::string& air_binary, int prefer_port) {
  std::string log = home + "/server.log";
  std::string prefer = std::to_string(prefer_port);
  pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start the local workspace: fork failed");
  if (pid == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (in >= 0) ::dup2(in, 0);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    ::execl(air_binary.c_str(), air_binary.c_str(), "server", "--home", home.c_str(), "--port", "0",
            "--daemon", "--prefer-port", prefer.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace

// A daemon is alive exactly when it holds the home's lock; a busy one is waited for, never replaced (two
// daemons on one home split the runs and the tokens).
namespace {

// A process that is going away but still holds its files: a SIGKILL pending (`kill -9` returns once the
// signal is queued, before the process acts on it), already exiting (PF_EXITING), or a zombie. The fast path
// above must not hand out such a daemon: its lock is still held for a moment, and the command's request would
// meet a reset connection instead of a workspace started again.
bool process_dying(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  auto close = line.rfind(')');
  if (close == std::string::npos) return true;
  std::istringstream rest(line.substr(close + 1));
  std::string state;
  unsigned long long field = 0, flags = 0;
  rest >> state;
  for (int i = 4; i <= 9 && rest; ++i) rest >> (i == 9 ? flags : field);  // fields 4..8, then flags (9)
  constexpr unsigned long long kPfExiting = 0x4;
  if (state == "Z" || state == "X" || state == "x" || (flags & kPfExiting)) return true;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  constexpr unsigned long long kSigkillBit = 1ull << (SIGKILL - 1);
  while (std::getline(status, line))
    if (line.rfind("SigPnd:", 0) == 0 || line.rfind("ShdPnd:", 0) == 0)
      if (std::stoull(line.substr(7), nullptr, 16) & kSigkillBit) return true;
  return false;
}

}  // namespace

WorkspaceTarget ensure_local_daemon(const std::string& home, const std::string& air_binary) {
  std::error_code ec;
  fs::create_directories(home, ec);
  ::chmod(home.c_str(), 0700);
  auto target = [&](const DaemonInfo& d) {
    return WorkspaceTarget{d.url, d.token, "", "local workspace (" + home + ")"};
  };
  // The usual case without a request: the home's daemon holds its lock, and server.json (written once it
  // listens) is that daemon's. A health request here cost a connection and ~1 ms of every command.
  if (auto d = read_daemon_info(home);
      d && daemon_lock_holder(home) == d->pid && ::kill(d->pid, 0) == 0 && !process_dying(d->pid))
    return target(*d);
  if (auto d = read_daemon_info(home); d && daemon_healthy(*d)) return target(*d);

  std::string lock_path = home + "/server.lock";
  int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) throw Error("cannot create " + lock_path, "check that AIR_HOME (" + home + ") is writable");
  ::flock(lock, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  bool spawned = false;
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    auto waited = std::chrono::steady_clock::now() - start;
    if (daemon_lock_held(home)) {
      if (auto d = read_daemon_info(home); d && daemon_healthy(*d, 5000)) return target(*d);
      if (waited > std::chrono::seconds(120))
        throw Error("the local workspace is running but has not answered for 2 minutes",
                    "see " + home + "/server.log; 'air server stop' stops it");
    } else if (!spawned) {
      if (!fs::exists(air_binary))
        throw Error("cannot start the local workspace: " + air_binary + " does not exist",
                    "set AIR_BIN_DIR to the folder holding the air binary");
      // A daemon that died (kill -9, reboot) left its file: start again on its port if it is free, so that
      // the node agents still running find the workspace where they last saw it.
      int prefer_port = 0;
      if (auto old = read_daemon_info(home)) prefer_port = old->port;
      fs::remove(daemon_info_path(home), ec);
      spawn_daemon(home, air_binary, prefer_port);
      spawned = true;
      start = std::chrono::steady_clock::now();
    } else if (waited > std::chrono::seconds(20)) {
      throw Error("the local workspace did not start within 20 s", "see " + home + "/server.log");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

WorkspaceTarget resolve_workspace(const std::string& profile) {
  if (auto t = configured_workspace(profile)) return *t;
  return ensure_local_daemon(air_home(), default_air_binary());
}

bool stop_local_daemon(const std::string& home, int timeout_ms) {
  auto d = read_daemon_info(home);
  if (!d || !daemon_lock_held(home) || ::kill(d->pid, 0) != 0) {  // a stale file's pid may be anyone's now
    std::error_code ec;
    fs::remove(daemon_info_path(home), ec);
    return false;
  }
  ::kill(d->pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (::kill(d->pid, 0) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (::kill(d->pid, 0) == 0) ::kill(d->pid, SIGKILL);
  std::error_code ec;
  fs::remove(daemon_info_path(home), ec);
  return true;
}

}  // namespace air
