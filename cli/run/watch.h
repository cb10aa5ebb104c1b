// `air run --watch`: follows a run's status changes and node 0's log until the run is terminal.
#pragma once
#include <string>

#include "cli/verbs.h"
#include "core/client/client.h"

namespace air::cli {

// Status changes go to stderr (STATUS events with -o json), node 0's log of the current attempt to stdout.
// Returns 0 when the run SUCCEEDED, 1 when it ended otherwise, 130 when interrupted (Ctrl-C).
int watch_run(Client& c, const std::string& run_id, Context& ctx);

}  // namespace air::cli
