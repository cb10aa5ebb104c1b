// How long a run will take, from history: the same workload's earlier runtimes, else its owner's, else
// nothing (the bound, timeout_minutes or default_runtime_minutes, stays what it is: a bound). Pure.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace air::server::sched {

struct RuntimeEstimate {
  int64_t ms = 0;       // 0: no history; the bound is all there is
  int samples = 0;      // how many earlier runs it is taken from
  std::string basis;    // "workload" | "owner" | ""
};

// The median of the same workload's runtimes (one is enough), else of the owner's (three at least),
// capped at bound_ms (a run is stopped at its bound, so it never takes longer).
RuntimeEstimate estimate_runtime(std::vector<int64_t> same_workload, std::vector<int64_t> same_owner, int64_t bound_ms);

}  // namespace air::server::sched
