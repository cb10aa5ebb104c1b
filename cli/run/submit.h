// The seam between `air run`'s validation (cli/run/run.cc) and submitting to a workspace (cli/run/submit.cc).
#pragma once
#include <string>
#include <vector>

#include "cli/verbs.h"
#include "core/snapshot/snapshot.h"
#include "core/workload/workload.h"

namespace air::cli {

struct RunOptions {
  std::string file;                    // -f/--file
  bool dry_run = false;                // --dry-run
  bool watch = false;                  // --watch
  std::vector<std::string> overrides;  // --override KEY=VALUE, in order
  std::string idempotency_key;         // --idempotency-key (wins over the YAML's idempotency_token)
  std::string backend;                 // --backend k8s: print Kubernetes manifests (dry-run only)
  bool jobset = false;                 // --jobset: a JobSet instead of Service + Indexed Job
};

// The snapshot of a workload's code_source: the working tree under its ignore rules, or with
// code_source.snapshot.git the exported commit (tracked files only). *source says which, for the plan.
SnapshotManifest workload_snapshot(const CodeSource& cs, std::string* source);

// Submits a validated workload (snapshot upload, POST, optional --watch). Returns the exit code.
int submit_workload(const air::Workload& w, const RunOptions& opts, Context& ctx);

// `air run -h config[.<path>]`: when args ask for field help, prints it and returns true with the exit code
// in *code. Called by run_cli before CLI11 parses, because CLI11 treats -h as a flag without a value.
bool run_field_help(const std::vector<std::string>& args, Context& ctx, int* code);

}  // namespace air::cli
