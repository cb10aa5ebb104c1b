// The run table: every run the workspace ever had (a workspace keeps them all), the index of those not yet
// over, and the idempotency keys of submits, under the run lock (mu()). The façade (submit, get, list), the
// queue and the attempt lifecycle touch records only with it held; the queue and the lifecycle share it
// (queue.h says why one lock). "Is it over" has one answer, here: over().
#pragma once
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "core/wire/run_state.h"
#include "server/store/store.h"

namespace air::server {

// A run's or attempt's state is an enum on its record (RunRecord::state, attempt_states: server/store/store.h);
// its name is written only where the record becomes a reply (RunRecord::wire()) or a database row.
RunState state_of(const RunRecord& r);
RunState state_of(const RunRecord& r, const api::AttemptInfo& a);
// Whether the run or attempt is over: a terminal state (SUCCEEDED, FAILED, CANCELED, TIMED_OUT, PREEMPTED).
// A run whose attempt was PREEMPTED is not over: it waits for its next attempt.
bool over(const RunRecord& r);
bool over(const RunRecord& r, const api::AttemptInfo& a);
// The one way the workspace writes a run's or attempt's state.
void set_state(RunRecord& r, RunState s);
void set_state(RunRecord& r, const api::AttemptInfo& a, RunState s);

class RunTable {
 public:
  // The run lock: held by whoever reads or changes a run record (never while waiting on a client command or a
  // log read).
  std::mutex& mu() const { return mu_; }

  // Adds a run (at submit, or when the workspace loads its store): indexes its idempotency key, and the run
  // as active unless it is over. Returns the stored record.
  RunRecord& add(RunRecord r);
  // The run; throws HttpError 404 "run <id> not found".
  RunRecord& find(const std::string& id);
  const RunRecord& find(const std::string& id) const;
  // The run, or nullptr.
  RunRecord* get(const std::string& id);
  const RunRecord* get(const std::string& id) const;
  bool contains(const std::string& id) const { return runs_.count(id) > 0; }
  // The run a submit's idempotency key made, or nullptr for a key not used yet.
  const RunRecord* by_idempotency_key(const std::string& key) const;

  // The runs not yet over, in run id order: what the scheduler's passes walk (walking all 100,000 runs of a
  // big workspace each tick held the lock ~40 ms: bench/server_load.sh team).
  std::vector<RunRecord*> active();
  std::vector<const RunRecord*> active() const;
  // Drops the runs found over from the active index and returns the others, in run id order. A run leaves
  // the index here and only here (the tick calls it), so a pass between two ticks still sees every run that
  // was active when it began (poll_jobs relies on this: active_ids()).
  std::vector<RunRecord*> prune_active();
  const std::set<std::string>& active_ids() const { return active_; }

  // Every run, in run id order.
  const std::map<std::string, RunRecord>& all() const { return runs_; }

 private:
  mutable std::mutex mu_;
  std::map<std::string, RunRecord> runs_;
  std::set<std::string> active_;
  std::map<std::string, std::string> idempotency_;  // key -> run id
};

}  // namespace air::server
