// What a waiting run tells its user (status_message, `air get run`): where it stands, what it waits
// for, and when it may start.
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

}  // namespace

std::string describe(const Waiting& w, int64_t now_ms) {
  std::string where = w.pool == "default" || w.pool.empty() ? "" : fmt::format(" in pool '{}'", w.pool);
  if (w.pool_gpus == 0 && w.queue_length == 0)
    return fmt::format("cannot start: pool '{}' is not configured on this workspace", w.pool);
  if (!w.estimated_start_ms)
    return fmt::format("cannot start: needs {} GPUs, pool '{}' has {}", w.gpus_needed, w.pool, w.pool_gpus);
  std::string s = fmt::format("queued: position {} of {}{}, waiting for {} GPU{}", w.position, w.queue_length,
                              where, w.gpus_needed, w.gpus_needed == 1 ? "" : "s");
  if (w.head) {
    s += fmt::format(", reserved: {} of {} held", w.reserved_held, w.gpus_needed);
    if (w.preempting) s += ", stopping BEST_EFFORT runs for it";
  }
  s += ", estimated start " + in_about(*w.estimated_start_ms - now_ms);
  return s;
}

}  // namespace air::server::sched
