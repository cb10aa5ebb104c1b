// `air run --dry-run --backend k8s`: flags, their checks, and printing what core/k8s/manifest.cc builds.
#include "cli/run/k8s.h"

#include <CLI/CLI.hpp>

#include <ostream>

#include "core/base/error.h"
#include "core/k8s/manifest.h"

namespace air::cli {

void add_k8s_options(CLI::App& cmd, RunOptions& opts) {
  cmd.add_option("--backend", opts.backend,
                 "With --dry-run: print the manifests this backend would apply instead of the plan (only 'k8s')")
      ->check(CLI::IsMember({"k8s"}));
  cmd.add_flag("--jobset", opts.jobset, "With --backend k8s: one JobSet instead of a headless Service + Indexed Job");
}

void check_k8s_options(const RunOptions& opts) {
  if (opts.jobset && opts.backend.empty()) {
    throw usage_error("--jobset only applies with --backend k8s", "air run -f FILE --dry-run --backend k8s --jobset");
  }
  if (!opts.backend.empty() && !opts.dry_run) {
    throw usage_error("air cannot submit to Kubernetes yet: only the dry-run exists for --backend k8s",
                      "add --dry-run to print the manifests (docs/kubernetes.md); to run, use a workspace "
                      "(the local backend, or air server --backend slurm)");
  }
}

void print_k8s_manifests(const Workload& w, const std::vector<std::string>& notes,
                         const std::vector<Diagnostic>& warnings, const RunOptions& opts, Context& ctx) {
  K8sOptions ko;
  ko.flavor = opts.jobset ? K8sFlavor::kJobSet : K8sFlavor::kIndexedJob;
  nlohmann::json objects = k8s_manifests(w, ko);
  if (ctx.global.output == "json") {
    *ctx.out << k8s_list(objects).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  for (const auto& note : notes) *ctx.err << note << "\n";
  for (const auto& d : warnings) *ctx.err << render(d);
  *ctx.out << "# air run --dry-run --backend k8s: \"" << w.experiment_name
           << "\" is valid; nothing was submitted or applied.\n"
           << "# Placeholders (<...>) and the Secret " << k8s_names(w, ko).token_secret
           << " are filled in at submit (docs/kubernetes.md).\n"
           << k8s_yaml_documents(objects);
}

}  // namespace air::cli
