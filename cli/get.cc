// `air get run <id>` (also `air get <id>`): a run's status, nodes, attempts, timings, snapshot and
// configuration; -o json prints the workspace's whole record.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/remote.h"
#include "cli/verbs.h"
#include "core/error.h"

namespace air::cli {

namespace {

void print_run(std::ostream& out, const api::RunInfo& r, bool color) {
  auto row = [&](const char* k, const std::string& v) { out << fmt::format("  {:<14}{}\n", k, v.empty() ? "-" : v); };
  out << "Run " << r.run_id << "\n";
  row("Status", styled_state(r.state, color) + (r.status_message.empty() ? "" : "  (" + r.status_message + ")"));
  row("Experiment", r.experiment_name);
  row("Accelerators", fmt::format("{} x {} ({} node(s) of {})", r.num_accelerators, r.accelerator_type, r.num_nodes,
                                  r.accelerators_per_node));
  row("Submitted", format_time(r.submitted_at_ms));
  row("Started", format_time(r.started_at_ms));
  row("Ended", format_time(r.ended_at_ms));
  row("Duration", r.started_at_ms ? format_duration(run_duration_ms(r, now_ms())) : "");
  row("Attempts", fmt::format("{} (max retries {})", r.attempts.size(),
                              r.max_retries < 0 ? std::string("unlimited") : std::to_string(r.max_retries)));
  if (r.timeout_minutes) row("Timeout", fmt::format("{} min", *r.timeout_minutes));
  row("Snapshot", r.snapshot_digest.empty() ? "" : fmt::format("sha256:{} ({} bytes)", r.snapshot_digest.substr(0, 16), r.snapshot_bytes));
  for (auto it = r.attempts.rbegin(); it != r.attempts.rend(); ++it) {
    const auto& a = *it;
    out << fmt::format("\nAttempt {}: {}  (master port {}, {} -> {})\n", a.number, a.state, a.master_port,
                       format_time(a.started_at_ms), a.ended_at_ms ? format_time(a.ended_at_ms) : "now");
    if (!a.job_id.empty()) out << "  slurm job: " << a.job_id << "\n";
    if (a.failing_node) {
      out << fmt::format("  first failing node: {} (exit code {}): {}\n", *a.failing_node,
                         a.failing_exit_code ? std::to_string(*a.failing_exit_code) : std::string("none"), a.reason);
      for (const auto& l : a.failing_lines) out << "    | " << l << "\n";
    } else if (!a.reason.empty()) {
      out << "  reason: " << a.reason << "\n";
    }
    out << fmt::format("  {:<6}{:<11}{:<6}{:<9}{:<10}{}\n", "NODE", "STATE", "EXIT", "PID", "GPUS", "MESSAGE");
    for (const auto& n : a.nodes)
      out << fmt::format("  {:<6}{:<11}{:<6}{:<9}{:<10}{}\n", n.rank, n.state,
                         n.exit_code ? std::to_string(*n.exit_code) : "-", n.pid ? std::to_string(*n.pid) : "-",
                         n.gpus.empty() ? "-" : n.gpus, n.message);
  }
  if (!r.workload_yaml.empty()) {
    out << "\nConfiguration (" << (r.file_name.empty() ? "workload" : r.file_name) << "):\n";
    size_t start = 0;
    while (start < r.workload_yaml.size()) {
      auto nl = r.workload_yaml.find('\n', start);
      out << "  " << r.workload_yaml.substr(start, nl == std::string::npos ? std::string::npos : nl - start) << "\n";
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
}

}  // namespace

void setup_get(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("get", "Show a run: air get run <id> (or air get <id>)");
  auto args = std::make_shared<std::vector<std::string>>();
  cmd->add_option("args", *args, "run <id>, or <id>")->required();
  cmd->callback([&ctx, args] {
    std::string id;
    if (args->size() == 2 && (*args)[0] == "run") id = (*args)[1];
    else if (args->size() == 1 && (*args)[0] != "run") id = (*args)[0];
    else throw usage_error("expected 'air get run <id>' or 'air get <id>'");
    check_run_id(id);
    Session s = connect(ctx);
    api::RunInfo r = fetch_run(*s.client, id);
    if (ctx.global.output == "json") {
      nlohmann::json j = r;
      j["duration_ms"] = run_duration_ms(r, now_ms());
      *ctx.out << j.dump() << "\n";
    } else {
      print_run(*ctx.out, r, stdout_is_tty());
    }
  });
}

}  // namespace air::cli
