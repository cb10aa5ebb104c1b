// What `air server` is configured with (server.conf and flags; server/workspace/config.h reads them): one
// struct handed to the workspace's parts, each reading the fields it uses.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "server/scheduler/fair_config.h"
#include "server/scheduler/policy.h"
#include "server/workspace/isolation.h"

namespace air::server {

struct WorkspaceOptions {
  std::string home;      // state folder: workspace.db, blobs/, runs/
  std::string bin_dir;   // given to agents (--bin-dir)
  std::string volumes_root;  // where /Volumes is kept; empty: home/volumes
  // What separates users' runs (serve() probes it; docs/security.md "Threat model"): a local backend without
  // a sandbox refuses other users' runs at submit, and each node is told the account and whether it must
  // refuse to run without a sandbox.
  Isolation isolation;
  uint64_t max_snapshot_bytes = 4ull << 30;
  // The snapshot cache of a CLI that shares this home (HOME/cache/snapshots): POST /snapshots/{digest}/adopt
  // links an archive from there into the blob store instead of an upload (BlobStore::adopt says when). Empty:
  // no adoption.
  std::string adopt_snapshots_from;
  uint64_t max_unpack_bytes = 8ull << 30;   // what one node may unpack a snapshot to (disk blocks)
  uint64_t max_unpack_entries = 1000000;
  int heartbeat_timeout_ms = 15000;  // an agent silent this long is lost
  int stop_grace_ms = 10000;         // after "stop", agents still alive this long are killed
  int tick_ms = 100;
  int job_poll_ms = 1000;            // how often a batch backend's jobs are polled (squeue)
  int64_t minute_ms = 60000;         // how long timeout_minutes' minute lasts (shortened by e2e tests)
  // GPU pools (server.conf [pools]): with the local backend each takes the next `gpus` GPU indices; with
  // a batch backend only the names count (Slurm maps each to a partition). Empty: one pool, "default",
  // of every GPU the backend hands out. docs/scheduler.md.
  std::vector<sched::Pool> pools;
  int64_t default_runtime_minutes = 60;  // the runtime a run without timeout_minutes is assumed to take
  bool preemption = true;                // CRITICAL runs may stop BEST_EFFORT runs of their pool
  sched::FairConfig fair;                // fair share, shares, quotas, borrowing (server.conf; fairness.h)
  bool ticker = true;                // false: tests call tick() themselves
  int audit_retention_days = 365;    // audit entries older than this are deleted (on start, then hourly); 0: kept
  std::string admin_user = "admin";  // the bootstrap admin's name on a new database (`air server`: the login name)
  std::function<int64_t()> now_ms;   // the clock; defaults to the system clock
};

}  // namespace air::server
