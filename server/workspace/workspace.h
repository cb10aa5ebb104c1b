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

  // Tokens and who they are (server/workspace/auth.h).
  Auth& auth() { return *auth_; }
  const Auth& auth() const { return *auth_; }
  // Volume owners, grants and the checks on them (server/workspace/volume_access.h).
  VolumeAccess& volume_access() { return *volume_access_; }
  int64_t now_ms() const { return now(); }

  // A run's owner and access list (throws 404 for an unknown run).
  struct RunAccess {
    std::string owner;
    std::vector<api::RunPermission> grants;
  };
  RunAccess run_access(const std::string& run_id) const;
  // Throws 403 PERMISSION_DENIED (naming the missing level) unless `who` has `need` on the run.
  void require_run(const Principal& who, const std::string& run_id, RunLevel need) const;

  // Code snapshots: the blob store, their uploaders, who may read one (server/workspace/snapshots.h).
  Snapshots& snapshots() { return *snapshots_; }

  // `who` becomes the run's owner; the workload's permissions are its access list. Refused (403) when the
  // owner may not READ a secret scope the workload references.
  api::RunInfo submit(const api::SubmitRequest& req, const Principal& who);
  api::RunInfo submit(const api::SubmitRequest& req) { return submit(req, auth_->bootstrap_principal()); }
  api::RunInfo get(const std::string& run_id) const;
  // Every run, as the bootstrap admin sees them (in-process callers).
  api::RunList list(int limit, bool all_status) const { return list(limit, all_status, auth_->bootstrap_principal(), true); }
  // The runs `who` may view: only its own unless all_users.
  api::RunList list(int limit, bool all_status, const Principal& who, bool all_users) const;
  api::CancelReply cancel(const std::string& run_id) { return lifecycle_->cancel(run_id); }

  // Fair share, quotas and usage records (server/workspace/fairness.h).
  Fairness& fairness() { return *fairness_; }

  // The agents' routes and the log reads (server/workspace/lifecycle.h).
  Lifecycle& lifecycle() { return *lifecycle_; }
  api::NodeSpec node_spec(const std::string& run_id, int attempt, int node) const {
    return lifecycle_->node_spec(run_id, attempt, node);
  }
  api::NodeStatusReply node_status(const std::string& run_id, int attempt, int node,
                                   const api::NodeStatusReport& report) {
    return lifecycle_->node_status(run_id, attempt, node, report);
  }
  AppendResult append_log(const std::string& run_id, int attempt, int node, uint64_t offset,
                          std::string_view data) {
    return lifecycle_->append_log(run_id, attempt, node, offset, data);
  }
  void note_metrics(const std::string& run_id, int attempt) { lifecycle_->note_metrics(run_id, attempt); }
  LogRead read_log(const std::string& run_id, int attempt, int node, std::optional<uint64_t> offset,
                   std::optional<uint64_t> tail_lines, uint64_t max_bytes, std::chrono::milliseconds wait) {
    return lifecycle_->read_log(run_id, attempt, node, offset, tail_lines, max_bytes, wait);
  }

  // Told of every log append and run-state change (see LogStore::set_listener).
  void set_log_listener(std::function<void()> f) { logs_.set_listener(std::move(f)); }
  // Secrets and MLflow (server/workspace/services.h).
  WorkspaceServices& services() { return *services_; }
  const WorkspaceOptions& options() const { return opts_; }
  // The audit log's pruning, then one pass of the lifecycle's clock (Lifecycle::tick); the tick thread calls
  // it, tests may too.
  void tick();
  // Deletes audit entries past audit_retention_days (start() and tick() call it; at most hourly unless forced).
  // Returns how many were deleted.
  int64_t prune_audit(bool force = false);

 private:
  int64_t now() const { return opts_.now_ms(); }
  // The run table's half of who may read a snapshot (Snapshots::RunReaders).
  std::optional<std::string> snapshot_run_refusal(const Principal& who, const std::string& digest) const;
  std::string new_run_id() const;

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
  int64_t seq_ = 0;  // the last submission's number (run lock)
  std::atomic<int64_t> audit_pruned_ms_{0};  // when prune_audit last ran

  std::atomic<bool> stopping_{false};
  std::thread ticker_;
};

}  // namespace air::server
