// The two keys the scheduler reads (issue 30): priority_class (BEST_EFFORT / NORMAL / CRITICAL, default
// NORMAL) and compute.pool_id; their mistakes render as located diagnostics.
#include <catch2/catch.hpp>

#include "core/base/diagnostics.h"
#include "core/workload/workload.h"

namespace {

air::ParseResult parse(const std::string& extra, const std::string& compute_extra = "") {
  air::ParseOptions opts;
  opts.check_paths = false;
  return air::parse_workload_text("experiment_name: demo\ncompute:\n  accelerator_type: GPU_8xH100\n"
                                   "  num_accelerators: 8\n" + compute_extra + "command: python train.py\n" + extra,
                                   "train.yaml", "/tmp", opts);
}

std::string diagnose(const std::string& extra, const std::string& compute_extra = "") {
  return air::render_all(parse(extra, compute_extra).diagnostics, "train.yaml", "nothing was submitted");
}

}  // namespace

TEST_CASE("workload: priority_class and compute.pool_id are read, NORMAL and no pool by default") {
  auto plain = parse("");
  REQUIRE(plain.ok());
  CHECK(plain.workload->priority_class == "NORMAL");
  CHECK(plain.workload->compute.pool_id.empty());
  auto set = parse("priority_class: CRITICAL\n", "  pool_id: training\n");
  REQUIRE(set.ok());
  CHECK(set.workload->priority_class == "CRITICAL");
  CHECK(set.workload->compute.pool_id == "training");
  CHECK(parse("priority_class: BEST_EFFORT\n").ok());
}

TEST_CASE("diagnostic: unknown priority_class, empty pool_id") {
  CHECK(diagnose("priority_class: CRITICLA\n") == R"(train.yaml:6:17: error: unknown priority_class 'CRITICLA'
priority_class: CRITICLA
                ^~~~~~~~
  hint: did you mean 'CRITICAL'?
air: 1 error in train.yaml; nothing was submitted
)");
  CHECK(diagnose("priority_class: urgent\n") == R"(train.yaml:6:17: error: unknown priority_class 'urgent'
priority_class: urgent
                ^~~~~~
  hint: use BEST_EFFORT, NORMAL or CRITICAL
air: 1 error in train.yaml; nothing was submitted
)");
  CHECK(diagnose("", "  pool_id: \"\"\n") == R"(train.yaml:5:3: error: 'compute.pool_id' is empty
  pool_id: ""
  ^~~~~~~
  hint: remove it to use the default pool
air: 1 error in train.yaml; nothing was submitted
)");
}
