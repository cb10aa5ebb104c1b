// The workspace: a thin façade over its parts (docs/architecture.md "The workspace's parts"). It owns the
// run table (run_table.h) under one lock with the queue and the attempt lifecycle (this class's private
// half: queue.cc, scheduler.cc, scheduler_jobs.cc), and hands out the parts that keep their own state:
// auth (auth.h: tokens, own lock), volume access (volume_access.h), snapshots (snapshots.h), services
// (secrets, MLflow) and the stores.
// Submits pass admission's named steps (admission.h) before they touch the run table. A tick thread
// enforces heartbeats, timeouts and stop grace periods.
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
#include "server/health/run_health.h"
#include "server/scheduler/policy.h"
#include "server/store/blobs.h"
#include "server/store/identity.h"
#include "server/workspace/access.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"
#include "server/workspace/isolation.h"
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

struct WorkspaceOptions {
  std::string home;      // state folder: workspace.db, blobs/, runs/
  std::string bin_dir;   // given to agents (--bin-dir)
  std::string volumes_root;  // where /Volumes is kept; empty: home/volumes
  // What separates users' runs (serve() probes it; docs/security.md "Threat model"): a local backend without
  // a sandbox refuses other users' runs at submit, and each node is told the account and whether it must
  // refuse to run without a sandbox.
  Isolation isolation;
  uint64_t max_snapshot_bytes = 4ull << 30;
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
  bool ticker = true;                // false: tests call tick() themselves
  int audit_retention_days = 365;    // audit entries older than this are deleted (on start, then hourly); 0: kept
  std::string admin_user = "admin";  // the bootstrap admin's name on a new database (`air server`: the login name)
  std::function<int64_t()> now_ms;   // the clock; defaults to the system clock
};

struct LogRead {
  LogChunk chunk;
  bool done = false;  // the attempt ended: the log will not grow
};

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
  api::CancelReply cancel(const std::string& run_id);

  api::NodeSpec node_spec(const std::string& run_id, int attempt, int node) const;
  api::NodeStatusReply node_status(const std::string& run_id, int attempt, int node,
                                   const api::NodeStatusReport& report);
  AppendResult append_log(const std::string& run_id, int attempt, int node, uint64_t offset,
                          std::string_view data);
  // A node token of this attempt logged metrics through the MLflow API: progress for the stall watchdog.
  // A node token names the attempt, not the node, so it counts for every node of the attempt (in a
  // synchronous job a stalled rank stops rank 0's metrics too; nodes running independently are watched by
  // their log lines). docs/workload.md (stall_timeout_minutes).
  void note_metrics(const std::string& run_id, int attempt);
  LogRead read_log(const std::string& run_id, int attempt, int node, std::optional<uint64_t> offset,
                   std::optional<uint64_t> tail_lines, uint64_t max_bytes, std::chrono::milliseconds wait);

  // Told of every log append and run-state change (see LogStore::set_listener).
  void set_log_listener(std::function<void()> f) { logs_.set_listener(std::move(f)); }
  // Secrets and MLflow (server/workspace/services.h).
  WorkspaceServices& services() { return *services_; }
  const WorkspaceOptions& options() const { return opts_; }
  // One scheduler pass; the tick thread calls it, tests may too.
  void tick();
  // Deletes audit entries past audit_retention_days (start() and tick() call it; at most hourly unless forced).
  // Returns how many were deleted.
  int64_t prune_audit(bool force = false);

 private:
  struct NodeRuntime {
    int64_t last_seen_ms = 0;
    int64_t last_output_ms = 0;  // the last log append with data (the stall watchdog's clock)
  };
  struct Lingering {
    int agent_pid;
    int64_t deadline_ms;
  };

  int64_t now() const { return opts_.now_ms(); }
  // The run table's half of who may read a snapshot (Snapshots::RunReaders).
  std::optional<std::string> snapshot_run_refusal(const Principal& who, const std::string& digest) const;
  RunRecord& find(const std::string& run_id) { return runs_.find(run_id); }
  const RunRecord& find(const std::string& run_id) const { return runs_.find(run_id); }
  std::vector<RunRecord*> active_runs() { return runs_.active(); }
  std::vector<const RunRecord*> active_runs() const { return runs_.active(); }
  api::AttemptInfo* current(RunRecord& r);
  void check_node(const RunRecord& r, int attempt, int node) const;
  void save(const RunRecord& r);
  // The queue (server/workspace/queue.cc): the scheduling pass over every waiting run, and the GPUs.
  void setup_pools();
  std::string pool_for(const std::string& pool_id, std::vector<std::string>& notices) const;
  bool waiting(const RunRecord& r) const;
  sched::Input queue_input() const;
  void schedule();
  void schedule_pass();
  void show_waiting(const sched::Decisions& d);
  void preempt(RunRecord& victim, const std::string& by);
  void requeue(RunRecord& r, const std::string& why);
  bool start_attempt(RunRecord& r);
  void claim_gpus(const api::AttemptInfo& a);
  // Launches through the backend; returns why the whole attempt could not be launched ("" when it was).
  std::string launch(const AttemptLaunch& l, AttemptLaunchResult& res);
  void node_failed(RunRecord& r, int rank, std::optional<int> exit_code, const std::string& why,
                   const std::vector<std::string>& lines);
  void begin_stop(RunRecord& r, const std::string& kind, const std::string& reason);
  void maybe_finish_attempt(RunRecord& r);
  void finish_attempt(RunRecord& r);
  void release_attempt(RunRecord& r, const api::AttemptInfo& a);
  std::string attempt_end(const RunRecord& r, const api::AttemptInfo& a) const;
  void settle_run(RunRecord& r, api::AttemptInfo& a, const std::string& end);
  void tick_run(RunRecord& r);
  bool check_stall(RunRecord& r, api::AttemptInfo& a, int64_t t);
  // Batch backends (server/workspace/scheduler_jobs.cc): poll job states and run cancellations without the lock.
  void run_launches();
  void apply_launch(RunRecord& r, const AttemptLaunchResult& res, const std::string& error);
  void poll_jobs();
  void apply_job_state(RunRecord& r, const JobState* state);
  void run_job_cancels();
  void end_for_job(RunRecord& r, const JobState* state);
  std::vector<std::string> allocate_gpus(const std::string& pool, int nodes, int per_node);
  void release_gpus(RunRecord& r);
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
  std::string url_;

  mutable std::mutex mu_;
  RunTable runs_;  // every run, the active index, idempotency keys (server/workspace/run_table.h)
  std::map<std::tuple<std::string, int, int>, NodeRuntime> runtime_;
  health::HealthBook health_;  // GPU readings, steps and alerts of running nodes (server/health/run_health.h)
  std::vector<Lingering> lingering_;
  std::set<int> gpus_in_use_;
  std::map<std::string, std::pair<int, int>> pool_gpus_;  // pool -> (first GPU index, count); local backend
  std::map<std::string, std::string> requeue_note_;       // run -> why it waits again (failed, preempted)
  bool scheduling_ = false, schedule_again_ = false;      // schedule() is running / must go round again
  std::set<std::string> restarted_runs_;  // runs whose agents must re-attach after a workspace restart
  struct JobCancel {
    std::string job_id;
    int64_t next_try_ms = 0;
  };
  std::vector<JobCancel> job_cancels_;  // batch jobs to scancel (outside the lock)
  std::vector<AttemptLaunch> launches_;  // batch attempts to submit (outside the lock)
  int64_t last_job_poll_ms_ = 0;
  std::string last_job_poll_error_;
  int64_t seq_ = 0;
  std::atomic<int64_t> audit_pruned_ms_{0};  // when prune_audit last ran

  std::atomic<bool> stopping_{false};
  std::thread ticker_;
};

}  // namespace air::server
