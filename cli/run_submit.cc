// Placeholder for submitting: this build validates and plans only. The submit helper replaces this file.
#include "cli/run_submit.h"

#include "core/error.h"

namespace air::cli {

int submit_workload(const air::Workload& w, const RunOptions& opts, Context& ctx) {
  throw air::Error("submitting is not available in this build of air",
                   "run 'air run -f " + opts.file + " --dry-run' to validate and see the plan", kExitFailed);
}

}  // namespace air::cli
