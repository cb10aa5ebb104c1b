// Runtime estimates from history (estimate.h).
#include "server/scheduler/estimate.h"

#include <algorithm>

namespace air::server::sched {

namespace {

int64_t median(std::vector<int64_t>& v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

RuntimeEstimate estimate_runtime(std::vector<int64_t> same_workload, std::vector<int64_t> same_owner, int64_t bound_ms) {
  RuntimeEstimate e;
  if (!same_workload.empty()) {
    e = {median(same_workload), static_cast<int>(same_workload.size()), "workload"};
  } else if (same_owner.size() >= 3) {
    e = {median(same_owner), static_cast<int>(same_owner.size()), "owner"};
  } else {
    return e;
  }
  if (bound_ms > 0) e.ms = std::min(e.ms, bound_ms);
  e.ms = std::max<int64_t>(e.ms, 1);
  return e;
}

}  // namespace air::server::sched
