// `air run --dry-run --backend k8s`: the Kubernetes manifests of a workload (docs/kubernetes.md). Kept out of
// cli/run/run.cc so that the verb only gains two flags and one branch.
#pragma once
#include <string>
#include <vector>

#include "cli/run/submit.h"
#include "core/base/diagnostics.h"
#include "core/workload/workload.h"

namespace CLI { class App; }

namespace air::cli {

// Adds --backend and --jobset to `air run`.
void add_k8s_options(CLI::App& cmd, RunOptions& opts);
// Throws a usage error for --backend k8s without --dry-run (there is no Kubernetes backend to submit to) and
// for --jobset without --backend k8s. Called before the workload is read, so it fails fast.
void check_k8s_options(const RunOptions& opts);
// Prints the manifests to stdout: YAML documents, or with -o json one v1 List; notes and warnings go to
// stderr so the output can be piped to `kubectl apply -f -`.
void print_k8s_manifests(const Workload& w, const std::vector<std::string>& notes,
                         const std::vector<Diagnostic>& warnings, const RunOptions& opts, Context& ctx);

}  // namespace air::cli
