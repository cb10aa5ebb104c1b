// The queue: the GPU pools and which of their GPUs are in use (local backend), where each waiting run stands,
// and the one call of the scheduling policy (server/scheduler/policy.h). It decides; the attempt lifecycle
// (lifecycle.h) applies what it decides (starts attempts, preempts) and tells it when GPUs come back.
//
// Its lock is the run table's (RunTable::mu()): every call below is made with it held. One lock is the honest
// design here, not a shortcut: a pass reads every active run and, in the same step, starts or stops attempts
// on them, and an attempt's end frees GPUs and moves the queue at once; two locks would only nest.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "server/scheduler/policy.h"
#include "server/workspace/options.h"
#include "server/workspace/run_table.h"

namespace air::server {

class Fairness;

class Queue {
 public:
  // total_gpus: the backend's GPU count; < 0 for a batch system, which queues and allocates itself (then
  // only the pools' names count). Throws Error when the configured pools take more GPUs than there are.
  Queue(const WorkspaceOptions& opts, int total_gpus, const RunTable& runs, std::function<int64_t()> now);

  // --- at submit (admission) ---
  // The pool a new run queues in: its compute.pool_id, else "default" (or the first configured pool); a
  // notice when the workspace has no pools but the workload named one. Throws 400 UNKNOWN_POOL.
  std::string pool_for(const std::string& pool_id, std::vector<std::string>& notices) const;
  // How many GPUs the pool holds (local backend); nullopt when the backend allocates (batch) or no such pool.
  std::optional<int> pool_gpus(const std::string& pool) const;
  bool configured_pools() const { return !opts_.pools.empty(); }

  // --- a pass ---
  // Waiting for its (next) attempt: never started, or queued again after a failed or preempted attempt.
  static bool waiting(const RunRecord& r);
  // THE POLICY'S INPUT: every waiting and running run of the run table as the policy sees it (pool, class,
  // GPUs, submit time, runtime bound, owner). What the policy weighs (fair share, quotas) enters here.
  sched::Input input() const;
  // What to do now: the policy's decisions over input(); with a batch backend every waiting run starts, in
  // submission order (the batch system queues them).
  sched::Decisions decide() const;
  // Writes each waiting run's place, reservation and estimated start onto its record (kept in memory and on
  // the wire, not written each pass: a restarted workspace recomputes it). True when something shown changed.
  bool show_waiting(const sched::Decisions& d, RunTable& runs);
  // The run waits for its next attempt with its place in the queue (its submit time is unchanged); `why`
  // leads its status message until it starts.
  void requeue(RunRecord& r, const std::string& why);
  // The run leaves the queue (its attempt starts): its place and note are cleared.
  void leave(RunRecord& r);

  // --- GPUs (local backend; a batch backend's runs get empty strings) ---
  // One comma-separated GPU list per node, taken from the pool's free GPUs; empty when they do not fit.
  std::vector<std::string> allocate(const std::string& pool, int nodes, int per_node);
  // A running attempt's GPUs after a workspace restart.
  void claim(const api::AttemptInfo& a);
  // The attempt's GPUs are free again.
  void release(const api::AttemptInfo& a);
  bool allocates() const { return total_gpus_ >= 0; }

  // --- fair share (fairness.h): what input() adds beyond the run table, and the usage at an attempt's end ---
  void set_fairness(Fairness* f) { fair_ = f; }
  void attempt_ended(const RunRecord& r, const api::AttemptInfo& a, RunState end);
  // At submit: why a run of `gpus` GPUs by `user` in `pool` is refused by a quota ("" when it is not).
  std::string quota_refusal(const std::string& user, const std::string& pool, int gpus) const;

 private:
  const WorkspaceOptions& opts_;
  int total_gpus_;
  const RunTable& runs_;
  std::function<int64_t()> now_;
  std::set<int> gpus_in_use_;
  std::map<std::string, std::pair<int, int>> pool_gpus_;  // pool -> (first GPU index, count); local backend
  std::map<std::string, std::string> requeue_note_;       // run -> why it waits again (failed, preempted)
  Fairness* fair_ = nullptr;
};

}  // namespace air::server
