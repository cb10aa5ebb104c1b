// The dry-run plan of a validated workload: what each node will get (environment, secrets by reference,
// hyperparameters file, command) and what the code snapshot holds. Rendered as text or one JSON document.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/snapshot/snapshot.h"
#include "core/workload/workload.h"

namespace air {

// Placeholders for values only known on the node at run time.
inline constexpr const char* kMasterAddrPlaceholder = "<node 0 address, at run time>";
inline constexpr const char* kMasterPortPlaceholder = "<free port, per attempt>";
inline constexpr const char* kCodeSourcePlaceholder = "<run directory on the node>/code";
inline constexpr const char* kHyperparametersPlaceholder = "<run directory on the node>/hyperparameters.yaml";

// The variables air sets on node `rank` (values or placeholders), then the workload's env_variables, in
// that order. Secrets are not included (they are listed by reference only).
std::vector<std::pair<std::string, std::string>> planned_node_environment(const Workload& w, int rank);

struct PlanInput {
  const Workload* workload = nullptr;
  const SnapshotManifest* snapshot = nullptr;  // null when there is no code_source
  std::string snapshot_source;                 // what the snapshot is made of: the working tree, or a commit
  std::vector<std::string> overrides;          // notes of applied --override flags
  std::vector<Diagnostic> warnings;            // parse warnings and snapshot findings
};

std::string render_plan_text(const PlanInput& in);
nlohmann::json plan_to_json(const PlanInput& in);

// "12.3 KiB"
std::string human_bytes(uint64_t bytes);

}  // namespace air
