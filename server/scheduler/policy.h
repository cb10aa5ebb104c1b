// The GPU scheduling policy as a pure function: pools, running and queued runs, and the clock in;
// decisions out (starts, backfill starts, preemptions, each waiting run's place, reservation and
// estimated start). No I/O and no clock of its own, so the workspace and bench/scheduler_sim share it.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/scheduler/fair_share.h"
#include "server/scheduler/quota.h"

namespace air::server::sched {

// A workload's priority_class; within a pool, CRITICAL is served before NORMAL before BEST_EFFORT.
enum class PriorityClass : int { kBestEffort = 0, kNormal = 1, kCritical = 2 };
std::optional<PriorityClass> priority_from_string(std::string_view s);  // "" -> NORMAL
std::string to_string(PriorityClass p);

struct Pool {
  std::string name;
  int gpus = 0;
};

struct QueuedJob {
  std::string id;
  std::string pool;
  PriorityClass priority = PriorityClass::kNormal;
  int64_t submitted_ms = 0;  // the place in the queue; a retry keeps its run's
  int64_t seq = 0;           // ties at one millisecond: submission order
  int gpus = 0;              // the whole gang (nodes x GPUs per node); 0 for a CPU run
  int64_t runtime_bound_ms = 0;  // timeout_minutes; 0: Options::default_runtime_ms
  std::string owner;         // whose share and quota it counts against
  std::string group;         // the owner's group for shares and quotas ("" none)
  int64_t expected_ms = 0;   // its runtime from history (estimate.h); 0: unknown, the bound is assumed
};

struct RunningJob {
  std::string id;
  std::string pool;
  PriorityClass priority = PriorityClass::kNormal;
  int gpus = 0;
  int64_t started_ms = 0;
  int64_t runtime_bound_ms = 0;  // 0: Options::default_runtime_ms
  bool stopping = false;         // being stopped: its GPUs are back within the stop grace
  std::string owner;
  std::string group;
  int64_t expected_ms = 0;       // as QueuedJob's
};

struct Input {
  int64_t now_ms = 0;
  std::vector<Pool> pools;
  std::vector<RunningJob> running;
  std::vector<QueuedJob> queued;
  FairShareInput usage;       // Options::fair_share: decayed usage and shares
  std::vector<Quota> quotas;  // GPUs at once per user / group (the queued-runs limit is checked at submit)
};

enum class Policy {
  kEasyBackfill,  // ours: FCFS by class and submit time, the head's reservation, EASY backfill
  kFifo,          // the same order, no backfill: nothing passes a head that does not fit
  kFirstFit,      // before issue 30: runs in id order, any that fits starts, no reservation
};

struct Options {
  Policy policy = Policy::kEasyBackfill;
  int64_t default_runtime_ms = 60 * 60 * 1000;  // the bound of a run without timeout_minutes
  int64_t stop_grace_ms = 10000;                // how long a stopped run may still hold its GPUs
  bool preemption = true;                       // CRITICAL may stop BEST_EFFORT runs of its pool
  // Fair share between owners: within one class, the run whose group, then owner, has the least decayed
  // GPU usage against its share goes first, then submit time (docs/scheduler.md "Fair share").
  bool fair_share = false;
  // A run over its quota may use GPUs nobody within quota waits for; such a borrowed run is preempted
  // when a run within its own quota needs the GPUs (Kueue's cohort borrowing and reclaim).
  bool borrowing = false;
};

struct Start {
  std::string id;
  bool backfill = false;  // started past a head that does not fit, in a gap that does not delay it
  bool borrowed = false;  // over its owner's quota, on idle GPUs: given back when a run within quota needs them
};

struct Preemption {
  std::string victim;   // a running BEST_EFFORT run, or one on borrowed quota
  std::string for_job;  // the CRITICAL run (or the run within its quota) it makes room for
  bool reclaim = false; // the victim ran on borrowed quota
};

// Where one run that did not start stands.
struct Waiting {
  std::string id;
  std::string pool;
  int position = 0;       // 1-based in its pool's queue
  int queue_length = 0;   // runs waiting in that pool
  int gpus_needed = 0;
  int pool_gpus = 0;
  bool head = false;      // first in its pool: holds the reservation
  int reserved_held = 0;  // head only: free GPUs held for it now
  // When it may start: runs with history are assumed to take their usual time (estimate.h), the others
  // their bound. None when it can never fit its pool, or waits for its quota.
  std::optional<int64_t> estimated_start_ms;
  std::optional<int64_t> bound_start_ms;  // the same if every run uses its full bound
  int estimate_known = 0, estimate_runs = 0;  // of the runs the estimate counts, how many had history
  bool preempting = false;  // head only: BEST_EFFORT runs are being stopped for it
  int passed_by = 0;        // runs ahead of it submitted later (fair share put them first)
  std::string quota_block;  // why its quota holds it ("quota of group ml, 4 of 4 GPUs in use"); "" none
};

struct Decisions {
  std::vector<Start> starts;            // in the order they should be started
  std::vector<Preemption> preemptions;  // new ones only (a run already stopping is not repeated)
  std::vector<Waiting> waiting;         // every queued run not in starts, in queue order per pool
};

Decisions decide(const Input& in, const Options& opts = {});

// The text a waiting run shows: "queued: position 3 of 7, waiting for 8 GPUs, reserved: 6 of 8 held,
// estimated start in ~12 min"; with fair share "behind 2 runs of users with less recent use", with a
// quota "waiting: quota of group ml-research, 16 of 16 GPUs in use".
std::string describe(const Waiting& w, int64_t now_ms);

}  // namespace air::server::sched
