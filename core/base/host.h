// What this machine's kernel says about processes and ports: /proc/<pid>/stat, read in one place, and a free
// loopback port. Used by the node agent's process groups, the local backend's sessions and the launchers.
#pragma once
#include <optional>
#include <vector>

namespace air {

// The fields of /proc/<pid>/stat that we use (proc(5)).
struct ProcStat {
  int pid = 0;
  char state = '?';  // R, S, D, Z (zombie), X (dead), ...
  long ppid = 0, pgrp = 0, session = 0;
  bool gone() const { return state == 'Z' || state == 'X'; }
};

// One process's stat; nullopt when it does not exist (or vanished while read).
std::optional<ProcStat> read_proc_stat(int pid);
// Every process's stat, in /proc's order.
std::vector<ProcStat> list_processes();

// A free TCP port on 127.0.0.1 (bound, then released: the caller binds it soon after); 0 when none.
int free_loopback_port();

}  // namespace air
