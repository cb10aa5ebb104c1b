// What a waiting run tells its user (status_message, `air get run`): where it stands, why (fair share,
// quota), what it waits for, and when it may start, saying what the estimate rests on.
#include <fmt/format.h>

#include "server/scheduler/policy.h"

namespace air::server::sched {

namespace {

std::string in_about(int64_t ms) {
  if (ms < 60000) return "in < 1 min";
  int64_t min = (ms + 30000) / 60000;
  if (min < 60) return fmt::format("in ~{} min", min);
  return min % 60 ? fmt::format("in ~{} h {} min", min / 60, min % 60) : fmt::format("in ~{} h", min / 60);
}

std::string plural(int n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

}  // namespace

std::string describe(const Waiting& w, int64_t now_ms) {
  std::string where = w.pool == "default" || w.pool.empty() ? "" : fmt::format(" in pool '{}'", w.pool);
  if (w.pool_gpus == 0 && w.queue_length == 0)
    return fmt::format("cannot start: pool '{}' is not configured on this workspace", w.pool);
  if (w.gpus_needed > w.pool_gpus)
    return fmt::format("cannot start: needs {} GPUs, pool '{}' has {}", w.gpus_needed, w.pool, w.pool_gpus);
  if (!w.quota_block.empty())
    return fmt::format("waiting: {} (position {} of {}{})", w.quota_block, w.position, w.queue_length, where);
  std::string s = fmt::format("queued: position {} of {}{}", w.position, w.queue_length, where);
  if (w.passed_by > 0) s += ", behind " + plural(w.passed_by, "run of a user", "runs of users") + " with less recent use";
  s += fmt::format(", waiting for {} GPU{}", w.gpus_needed, w.gpus_needed == 1 ? "" : "s");
  if (w.head) {
    s += fmt::format(", reserved: {} of {} held", w.reserved_held, w.gpus_needed);
    if (w.preempting) s += ", stopping BEST_EFFORT runs for it";
  }
  if (!w.estimated_start_ms) return s;
  s += ", estimated start " + in_about(*w.estimated_start_ms - now_ms);
  // With history the estimate is the runs' usual times; the bound figure is what it would be if every
  // run used its full timeout (or default_runtime_minutes), and is said beside it when it differs.
  if (w.estimate_known > 0 && w.bound_start_ms && *w.bound_start_ms != *w.estimated_start_ms)
    s += fmt::format(" ({}; {} if all use their full bound)",
                     w.estimate_known == w.estimate_runs
                         ? std::string("from earlier runtimes")
                         : fmt::format("{} of {} runs ahead from earlier runtimes, the others by their bound",
                                       w.estimate_known, w.estimate_runs),
                     in_about(*w.bound_start_ms - now_ms));
  return s;
}

}  // namespace air::server::sched
