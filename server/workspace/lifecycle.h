// The attempt lifecycle: every attempt from its start to its end. It applies the queue's decisions (starts
// attempts with their GPUs, token and folder; preempts), hears the agents (node spec, status reports, log
// appends), runs the tick (heartbeat loss, timeouts, the stall watchdog, stop grace, batch jobs) and ends
// attempts: gives back what they held, names how they ended, and retries or ends the run.
//
// Its lock is the run table's (RunTable::mu(), shared with the queue: queue.h says why one lock). The public
// calls take it; schedule() and load() are called with it held. Batch client commands (sbatch, squeue,
// scancel) run without it (lifecycle_jobs.cc).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/wire/api.h"
#include "server/backends/backend.h"
#include "server/health/run_health.h"
#include "server/store/identity.h"
#include "server/store/logs.h"
#include "server/store/store.h"
#include "server/store/volumes.h"
#include "server/workspace/auth.h"
#include "server/workspace/options.h"
#include "server/workspace/queue.h"
#include "server/workspace/run_table.h"
#include "server/workspace/volume_access.h"

namespace air::server {

class WorkspaceServices;

struct LogRead {
  LogChunk chunk;
  bool done = false;  // the attempt ended: the log will not grow
};

class Lifecycle {
 public:
  // What the lifecycle touches besides its own state: each is owned by the workspace and outlives it.
  struct Parts {
    const WorkspaceOptions& opts;
    Backend& backend;
    Store& store;              // every state change is written before it is answered
    LogStore& logs;            // node logs; wake() tells readers and the HTTP server's deferred reads
    RunTable& runs;
    Queue& queue;
    Auth& auth;                // node tokens: one per attempt, revoked at its end
    WorkspaceServices& services;  // the attempts' MLflow runs
    VolumeAccess& volume_access;  // the volumes a node mounts
    const VolumeStore& volumes;
    const IdentityStore& identity;  // whether a node must refuse to run without a sandbox
  };
  explicit Lifecycle(Parts p);

  // Where agents reach this workspace; set once the HTTP server is bound.
  void set_url(const std::string& url);
  // After the run table is loaded (run lock held): each running attempt gets a full heartbeat window to
  // re-attach and keeps its GPUs.
  void load();
  // The queue moves (run lock held): the queue decides, this applies. Re-entrant by deferral (an attempt
  // that ends while a pass starts others makes the pass go round again).
  void schedule();
  // Cancel: a queued run ends at once; a running one is stopped (its nodes get the grace to exit).
  api::CancelReply cancel(const std::string& run_id);

  // --- the agents' routes ---
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
  // A node's log from offset (or its last tail_lines lines); waits up to `wait` for more while the attempt runs.
  LogRead read_log(const std::string& run_id, int attempt, int node, std::optional<uint64_t> offset,
                   std::optional<uint64_t> tail_lines, uint64_t max_bytes, std::chrono::milliseconds wait);

  // One pass of the clock: batch launches, job polls and cancels (unlocked), then under the lock every
  // active run's heartbeats, timeout, stall and stop grace, the queue, and lingering agents.
  void tick();

 private:
  struct NodeRuntime {
    int64_t last_seen_ms = 0;
    int64_t last_output_ms = 0;  // the last log append with data (the stall watchdog's clock)
  };
  struct Lingering {
    int agent_pid;
    int64_t deadline_ms;
  };
  struct JobCancel {
    std::string job_id;
    int64_t next_try_ms = 0;
  };

  int64_t now() const { return opts_.now_ms(); }
  void save(const RunRecord& r) { store_.save_run(r); }
  static api::AttemptInfo* current(RunRecord& r);
  void check_node(const RunRecord& r, int attempt, int node) const;

  void schedule_pass();
  void preempt(RunRecord& victim, const std::string& by);
  bool start_attempt(RunRecord& r);
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
  // Batch backends (lifecycle_jobs.cc): launches, job states and cancellations run without the lock.
  void run_launches();
  void apply_launch(RunRecord& r, const AttemptLaunchResult& res, const std::string& error);
  void poll_jobs();
  void apply_job_state(RunRecord& r, const JobState* state);
  void run_job_cancels();
  void end_for_job(RunRecord& r, const JobState* state);

  const WorkspaceOptions& opts_;
  Backend& backend_;
  Store& store_;
  LogStore& logs_;
  RunTable& runs_;
  Queue& queue_;
  Auth& auth_;
  WorkspaceServices& services_;
  VolumeAccess& volume_access_;
  const VolumeStore& volumes_;
  const IdentityStore& identity_;

  // Below: the lifecycle's own state, under the run lock.
  std::string url_;
  std::map<std::tuple<std::string, int, int>, NodeRuntime> runtime_;
  health::HealthBook health_;  // GPU readings, steps and alerts of running nodes (server/health/run_health.h)
  std::vector<Lingering> lingering_;
  bool scheduling_ = false, schedule_again_ = false;  // schedule() is running / must go round again
  std::set<std::string> restarted_runs_;  // runs whose agents must re-attach after a workspace restart
  std::vector<JobCancel> job_cancels_;    // batch jobs to scancel (outside the lock)
  std::vector<AttemptLaunch> launches_;   // batch attempts to submit (outside the lock)
  int64_t last_job_poll_ms_ = 0;
  std::string last_job_poll_error_;
};

}  // namespace air::server
