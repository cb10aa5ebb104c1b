// `air run --dry-run`'s check that every secret the workload references exists (by name; values are never
// read), against a workspace that is already reachable: a dry-run starts no daemon.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cli/verbs.h"
#include "core/base/diagnostics.h"
#include "core/secrets/client.h"
#include "core/workload/workload.h"

namespace air::cli {

struct SecretCheck {
  bool checked = false;        // false: no workspace reachable; `note` says why
  std::string workspace;       // where it was checked ("local workspace", "AIR_HOST", ...)
  std::string note;
  std::vector<Diagnostic> missing;  // one error per missing reference, with the put-secret command
};

// The workspace a dry-run may ask without starting anything: the configured one, or the embedded local
// daemon when it is already running; nullopt when neither.
struct ReachableWorkspace {
  std::string url, token;
  std::string label;  // "local workspace (http://...)", "AIR_HOST (http://...)"
};
std::optional<ReachableWorkspace> dry_run_workspace(const Context& ctx);

SecretCheck check_workload_secrets(const Workload& w, const std::string& file, const Context& ctx);

}  // namespace air::cli
