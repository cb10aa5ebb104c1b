// The embedded default: with no workspace configured, the CLI starts (or reuses) a local `air server`
// daemon whose state lives under $AIR_HOME. It listens on 127.0.0.1 on a random port with a random token;
// both are in $AIR_HOME/server.json (mode 0600) together with its pid.
#pragma once
#include <optional>
#include <string>

#include "core/client/config.h"

namespace air {

struct DaemonInfo {
  int pid = 0;
  int port = 0;
  std::string url;
  std::string token;
  std::string home;
};

std::string daemon_info_path(const std::string& home);
std::optional<DaemonInfo> read_daemon_info(const std::string& home);
// Atomic (temp file + rename), mode 0600.
void write_daemon_info(const std::string& home, const DaemonInfo& info);

// The pid is alive and the health endpoint answers with that pid.
bool daemon_healthy(const DaemonInfo& info, long timeout_ms = 1000);

// One daemon per home: `air server` holds an exclusive lock on $home/daemon.lock (an open-file-description
// lock, released by the kernel however the process ends) for its whole life.
struct DaemonLock {
  int fd = -1;
  DaemonLock() = default;
  explicit DaemonLock(int f) : fd(f) {}
  DaemonLock(DaemonLock&& o) noexcept : fd(o.fd) { o.fd = -1; }
  DaemonLock& operator=(DaemonLock&&) = delete;
  ~DaemonLock();
};
// Takes the lock or throws air::Error naming the live daemon (its pid) when another one holds it.
DaemonLock lock_daemon_home(const std::string& home);
// Whether a live daemon holds the home's lock (alive, however busy). Takes no lock itself.
bool daemon_lock_held(const std::string& home);
// The pid the live daemon wrote into the home's lock file (-1: held, pid not written yet); 0 when not held.
int daemon_lock_holder(const std::string& home);

// The `air` binary to start daemons and agents with: $AIR_BIN_DIR/air, else next to this executable.
std::string default_air_binary();

// Returns a healthy local workspace, starting one (detached, its own session) when none is running.
// Serialised by a lock file so that two CLIs started together share one daemon.
WorkspaceTarget ensure_local_daemon(const std::string& home, const std::string& air_binary);

// Stops the local daemon (SIGTERM, then SIGKILL after timeout). Returns false when none was running.
bool stop_local_daemon(const std::string& home, int timeout_ms = 10000);

}  // namespace air
