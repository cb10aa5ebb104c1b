// Reaching the workspace from the workspace verbs (run, get, logs, list, cancel, fs, team ...): the configured
// or embedded workspace, fetching one run, and the run id as typed. Their formatters are in format.h.
#pragma once
#include <memory>
#include <string>

#include "cli/verbs.h"
#include "core/client/client.h"
#include "core/client/config.h"
#include "core/wire/api.h"

namespace air::cli {

struct Session {
  WorkspaceTarget target;
  std::unique_ptr<Client> client;
};

// The configured workspace, or the embedded local one (started on demand).
Session connect(const Context& ctx);

api::RunInfo fetch_run(Client& c, const std::string& run_id);

// A run id as the user typed it: 1-64 of [A-Za-z0-9_-], else a usage error.
void check_run_id(const std::string& id);

}  // namespace air::cli
