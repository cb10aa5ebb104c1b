// `air run`: validate a workload file (every error at once), print the plan (--dry-run), or hand the
// validated workload to submit_workload (cli/run/submit.cc).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>

#include "cli/output.h"
#include "cli/run/k8s.h"
#include "cli/run/submit.h"
#include "cli/run/secret_check.h"
#include "cli/run/volume_check.h"
#include "core/client/client.h"
#include "cli/verbs.h"
#include "core/client/config.h"
#include "core/base/error.h"
#include "core/snapshot/snapshot.h"
#include "core/workload/workload.h"
#include "core/workload/keys.h"
#include "core/workload/plan.h"

namespace air::cli {

namespace {

constexpr const char* kRunFooter = R"(Examples:
  air run -f train.yaml --dry-run                  validate and print the plan; change nothing
  air run -f train.yaml --override compute.num_accelerators=32 --dry-run
  air run -f train.yaml --dry-run --backend k8s    the Kubernetes manifests it would apply (docs/kubernetes.md)
  air run -f train.yaml --watch                    submit, then follow status and node 0's logs
  air run -h config                                the workload YAML's top-level keys
  air run -h config.compute.accelerator_type       help for one field

Exit codes: 0 valid (or the run succeeded with --watch), 2 invalid workload or usage, 1 other failures.)";

// -o json of an invalid workload: the reference's error envelope (INVALID_ARGS), with every diagnostic.
nlohmann::json error_json(const std::vector<Diagnostic>& ds, const std::string& file) {
  nlohmann::json list = nlohmann::json::array();
  size_t errors = 0;
  for (const auto& d : ds) {
    list.push_back(to_json(d));
    errors += d.severity == "error";
  }
  return {{"v", 1},
          {"ts", rfc3339_now()},
          {"error",
           {{"code", "INVALID_ARGS"},
            {"kind", "PERMANENT"},
            {"message", std::to_string(errors) + (errors == 1 ? " error in " : " errors in ") + file},
            {"retryable", false},
            {"diagnostics", list}}}};
}

// Credential-like files and skipped entries in the snapshot are warnings: the run may still be right.
std::vector<Diagnostic> snapshot_warnings(const SnapshotManifest& m, const std::string& file) {
  std::vector<Diagnostic> out;
  for (const auto& path : m.credential_like) {
    Diagnostic d;
    d.file = file;
    d.severity = "warning";
    d.message = "the snapshot includes '" + path + "', which looks like a credential";
    d.hint = "if it is not meant to ship, add it to .airignore; use secrets for tokens";
    out.push_back(d);
  }
  for (const auto& skipped : m.skipped) {
    Diagnostic d;
    d.file = file;
    d.severity = "warning";
    d.message = "the snapshot skips '" + skipped.path + "': " + skipped.reason;
    out.push_back(d);
  }
  return out;
}

void run_workload(const RunOptions& opts, Context& ctx) {
  check_k8s_options(opts);
  ParseOptions popts;
  popts.overrides = opts.overrides;
  popts.check_paths = true;
  ParseResult r = parse_workload_file(opts.file, popts);
  const bool json = ctx.global.output == "json";
  std::vector<Diagnostic> warnings;
  for (const auto& d : r.diagnostics) {
    if (d.severity != "error") warnings.push_back(d);
  }
  if (!r.ok()) {
    if (json) {
      *ctx.out << envelope_text("error", error_json(r.diagnostics, opts.file)["error"]) << "\n";
    } else {
      for (const auto& note : r.notes) *ctx.err << note << "\n";
      *ctx.err << render_all(r.diagnostics, opts.file, "nothing was submitted", popts.max_errors);
    }
    ctx.exit_code = kExitUsage;
    return;
  }
  const Workload& w = *r.workload;
  if (!opts.backend.empty()) return print_k8s_manifests(w, r.notes, warnings, opts, ctx);
  if (!opts.dry_run) {
    if (!json) {
      for (const auto& note : r.notes) *ctx.err << note << "\n";
      for (const auto& d : warnings) *ctx.err << render(d);
    }
    ctx.exit_code = submit_workload(w, opts, ctx);
    return;
  }
  PlanInput plan;
  plan.workload = &w;
  plan.overrides = r.notes;
  std::optional<SnapshotManifest> manifest;
  if (w.code_source) {
    // Throws air::Error (exit 1) when the tree cannot be read: the workload itself was valid.
    manifest = workload_snapshot(*w.code_source, &plan.snapshot_source);
    plan.snapshot = &*manifest;
    for (const auto& d : snapshot_warnings(*manifest, opts.file)) warnings.push_back(d);
  }
  plan.warnings = warnings;
  SecretCheck secrets = check_workload_secrets(w, opts.file, ctx);
  std::vector<std::string> volume_warnings;  // volumes named here that are someone else's (a reachable workspace's view)
  if (auto ws = dry_run_workspace(ctx)) {
    Client c(ws->url, ws->token);
    volume_warnings = foreign_volume_warnings(w, c);
  }
  // A missing secret is the workspace's state, not a fault of the workload (docs/workload.md): the dry-run
  // warns, with the command that creates each one, and still exits 0.
  for (auto& d : secrets.missing) d.severity = "warning";
  if (json) {
    nlohmann::json j = plan_to_json(plan);
    if (!w.secrets.empty()) {
      nlohmann::json missing = nlohmann::json::array();
      for (const auto& d : secrets.missing) missing.push_back(to_json(d));
      j["secrets_check"] = {{"checked", secrets.checked}, {"workspace", secrets.workspace}, {"note", secrets.note},
                            {"missing", missing}};
    }
    if (!volume_warnings.empty()) j["volume_warnings"] = volume_warnings;
    j["dry_run"] = true;
    print_json(ctx, j);
  } else {
    *ctx.out << render_plan_text(plan);
    if (!w.secrets.empty()) {
      if (!secrets.checked) *ctx.out << "\nSecrets: " << secrets.note << "\n";
      else if (secrets.missing.empty())
        *ctx.out << "\nSecrets: all " << w.secrets.size() << " exist in the " << secrets.workspace << "\n";
      else
        *ctx.out << "\nSecrets: " << secrets.missing.size() << " of " << w.secrets.size() << " missing in the "
                 << secrets.workspace << "; air run there refuses this run until they exist\n";
    }
  }
  if (!json) {
    for (const auto& d : secrets.missing) *ctx.err << render(d);
    for (const auto& v : volume_warnings) *ctx.err << "air: warning: " << v << "\n";
    *ctx.err << "Dry run: configuration for \"" << w.experiment_name << "\" is valid; not submitting.\n";
  }
}

}  // namespace

bool run_field_help(const std::vector<std::string>& args, Context& ctx, int* code) {
  auto verb = std::find(args.begin() + (args.empty() ? 0 : 1), args.end(), "run");
  if (verb == args.end()) return false;
  for (size_t i = static_cast<size_t>(verb - args.begin()) + 1; i + 1 < args.size(); ++i) {
    if (args[i] != "-h" && args[i] != "--help") continue;
    const std::string& path = args[i + 1];
    if (path != "config" && path.rfind("config.", 0) != 0) return false;
    try {
      *ctx.out << field_help(path);
      *code = kExitOk;
    } catch (const air::Error& e) {
      *ctx.err << "air: error: " << e.what() << "\n";
      if (!e.hint().empty()) *ctx.err << "  hint: " << e.hint() << "\n";
      *code = e.exit_code();
    }
    return true;
  }
  return false;
}

void setup_run(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("run", "Validate a workload YAML and submit it (or print its plan with --dry-run)");
  cmd->footer(kRunFooter);
  cmd->fallthrough();  // global flags (-o json) may come after the verb
  auto opts = std::make_shared<RunOptions>();
  cmd->add_option("-f,--file", opts->file, "Workload YAML file (schema: air run -h config)")->required()->type_name("FILE");
  cmd->add_flag("--dry-run", opts->dry_run, "Validate and print the plan; upload and change nothing");
  cmd->add_flag("--watch", opts->watch, "After submitting, follow status and node 0's logs until the run ends");
  cmd->add_option("--override", opts->overrides,
                  "Set one field before validation: KEY=VALUE, VALUE parsed as YAML (repeatable)")
      ->take_all()
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--idempotency-key", opts->idempotency_key,
                  "Submitting twice with the same key gives the same run (wins over idempotency_token)");
  add_k8s_options(*cmd, *opts);
  cmd->callback([opts, &ctx] { run_workload(*opts, ctx); });
}

}  // namespace air::cli
