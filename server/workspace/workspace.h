// The workspace: a thin façade over its parts (docs/architecture.md "The workspace's parts"). It builds
// them, wires them and hands them out: the run table (run_table.h: runs, under the run lock), the queue
// (queue.h: pools, GPUs, the policy call), the attempt lifecycle (lifecycle.h: attempts from start to end,
// the agents' routes, the tick), auth (auth.h: tokens, own lock), volume access (volume_access.h), snapshots
// (snapshots.h), services (secrets, MLflow) and the stores. Its own half is small: submit (admission's named
// steps, admission.h, then the run table), get and list, and the tick thread.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/wire/api.h"
#include "server/backends/backend.h"
#include "server/store/blobs.h"
#include "server/store/identity.h"
#include "server/workspace/access.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"
#include "server/workspace/fairness.h"
#include "server/workspace/isolation.h"
#include "server/workspace/lifecycle.h"
#include "server/workspace/options.h"
#include "server/workspace/queue.h"
#include "server/workspace/run_spec.h"
#include "server/workspace/run_table.h"
#include "server/workspace/runs.h"
#include "server/workspace/snapshots.h"
#include "server/workspace/volume_access.h"
#include "server/store/logs.h"
#include "server/store/snapshot_uploads.h"
#include "server/store/store.h"
#include "server/store/volume_acl.h"
#include "server/store/volumes.h"

namespace air::server {

class WorkspaceServices;

class Workspace {
 public:
  Workspace(WorkspaceOptions opts, std::unique_ptr<Backend> backend);
  ~Workspace();

  // Where agents reach this workspace; set once the HTTP server is bound.
  void set_url(const std::string& url);
  // Reloads every run, re-arms heartbeat windows for running attempts, starts the tick thread.
  void start();
  void stop();
  // The audit log's pruning, then one pass of the lifecycle's clock (Lifecycle::tick); the tick thread calls
  // it, tests may too.
  void tick();
  // Deletes audit entries past audit_retention_days (start() and tick() call it; at most hourly unless forced).
  // Returns how many were deleted.
  int64_t prune_audit(bool force = false);
  const WorkspaceOptions& options() const { return opts_; }
  // Told of every log append and run-state change (see LogStore::set_listener).
  void set_log_listener(std::function<void()> f) { logs_.set_listener(std::move(f)); }

  // The parts (docs/architecture.md "The workspace's parts"): a route takes the ones it uses.
  Runs& runs() { return *runs_part_; }                   // submit, get, list, cancel, who may see a run
  Lifecycle& lifecycle() { return *lifecycle_; }         // the agents' routes, log reads, attempts
  Auth& auth() { return *auth_; }                        // tokens and who they are
  VolumeAccess& volume_access() { return *volume_access_; }  // volume owners, grants, their checks
  Snapshots& snapshots() { return *snapshots_; }         // code snapshots: blobs, uploaders, readers
  WorkspaceServices& services() { return *services_; }   // secrets and MLflow
  Fairness& fairness() { return *fairness_; }            // fair share, quotas, usage records

 private:
  int64_t now() const { return opts_.now_ms(); }
  // The run table's half of who may read a snapshot (Snapshots::RunReaders).
  std::optional<std::string> snapshot_run_refusal(const Principal& who, const std::string& digest) const;

  WorkspaceOptions opts_;
  std::unique_ptr<Backend> backend_;
  Store store_;
  VolumeStore volumes_;
  LogStore logs_;
  std::unique_ptr<WorkspaceServices> services_;
  std::unique_ptr<IdentityStore> identity_;
  std::unique_ptr<VolumeAccess> volume_access_;
  std::unique_ptr<Auth> auth_;
  std::unique_ptr<Snapshots> snapshots_;
  RunTable runs_;  // every run, the active index, idempotency keys, the run lock (run_table.h)
  std::unique_ptr<Fairness> fairness_;  // before queue_: the queue holds a pointer to it
  std::unique_ptr<Queue> queue_;
  std::unique_ptr<Lifecycle> lifecycle_;
  std::unique_ptr<Runs> runs_part_;
  std::atomic<int64_t> audit_pruned_ms_{0};  // when prune_audit last ran

  std::atomic<bool> stopping_{false};
  std::thread ticker_;
};

}  // namespace air::server
