// `air get run <id>` (also `air get <id>`): a run's status, nodes, attempts, timings, snapshot and
// configuration; -o json prints the workspace's whole record.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>

#include "cli/output.h"
#include "cli/format.h"
#include "cli/remote.h"
#include "cli/runs/system_summary.h"
#include "cli/verbs.h"
#include "core/base/error.h"
#include "core/base/codec.h"

namespace air::cli {

namespace {

std::string format_metric(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return fmt::format("{:.6g}", v);
}

// The full history of every metric of one attempt, through the MLflow API the workspace serves.
nlohmann::json metric_history(Client& c, const std::string& mlflow_run_id, const std::vector<api::Metric>& latest) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& m : latest) {
    nlohmann::json points = nlohmann::json::array();
    std::string page;
    do {
      auto j = c.get_json("/api/2.0/mlflow/metrics/get-history?run_id=" + mlflow_run_id + "&metric_key=" +
                          percent_encode(m.key) + (page.empty() ? "" : "&page_token=" + page));
      for (const auto& p : j.value("metrics", nlohmann::json::array())) points.push_back(p);
      page = j.value("next_page_token", "");
    } while (!page.empty());
    out[m.key] = points;
  }
  return out;
}

void print_history(std::ostream& out, const api::RunInfo& r, const api::AttemptInfo& a, const nlohmann::json& h) {
  out << fmt::format("Metrics of run {} attempt {} (MLflow run {})\n", r.run_id, a.number, a.mlflow_run_id);
  if (h.empty()) out << "  no metrics logged\n";
  for (const auto& [key, points] : h.items()) {
    out << "\n" << key << "\n" << fmt::format("  {:<10}{:<16}{}\n", "STEP", "VALUE", "TIME");
    for (const auto& p : points) {
      api::Metric m = p.get<api::Metric>();
      out << fmt::format("  {:<10}{:<16}{}\n", m.step, format_metric(m.value), format_time(m.timestamp));
    }
  }
}

// The latest attempt's system summary (cli/system_summary.h): GPU histories fetched for the means. A history
// that cannot be read leaves the means to the latest values: the summary never fails `air get run`.
std::string fetch_system_summary(Client& c, const api::RunInfo& r) {
  const api::AttemptInfo* a = r.attempts.empty() ? nullptr : &r.attempts.back();
  if (!a || a->mlflow_run_id.empty()) return {};
  MetricHistories h;
  try {
    for (const auto& key : summary_history_keys(a->metrics)) {
      std::string page;
      do {
        auto j = c.get_json("/api/2.0/mlflow/metrics/get-history?run_id=" + a->mlflow_run_id + "&metric_key=" +
                            percent_encode(key) + (page.empty() ? "" : "&page_token=" + page));
        for (const auto& p : j.value("metrics", nlohmann::json::array())) h[key].push_back(p.get<api::Metric>().value);
        page = j.value("next_page_token", "");
      } while (!page.empty());
    }
  } catch (const std::exception&) {
    h.clear();
  }
  return system_summary(a->metrics, h);
}

void print_run(std::ostream& out, const api::RunInfo& r, bool color, const std::string& system = {}) {
  auto row = [&](const char* k, const std::string& v) { out << fmt::format("  {:<14}{}\n", k, v.empty() ? "-" : v); };
  out << "Run " << r.run_id << "\n";
  row("Status", styled_state(r.state, color) + (r.status_message.empty() ? "" : "  (" + r.status_message + ")"));
  row("Experiment", r.experiment_name);
  row("Accelerators", fmt::format("{} x {} ({} node(s) of {})", r.num_accelerators, r.accelerator_type, r.num_nodes,
                                  r.accelerators_per_node));
  row("Priority", fmt::format("{} in pool '{}'", r.priority_class, r.pool_id.empty() ? "default" : r.pool_id));
  if (r.queue_position > 0)  // waiting for GPUs (docs/scheduler.md)
    row("Queue", fmt::format("position {} of {}{}{}", r.queue_position, r.queue_length,
                             r.gpus_reserved ? fmt::format(", {} GPU(s) reserved", r.gpus_reserved) : "",
                             r.estimated_start_ms ? ", estimated start " + format_time(*r.estimated_start_ms) : ""));
  row("Submitted", format_time(r.submitted_at_ms));
  row("Started", format_time(r.started_at_ms));
  row("Ended", format_time(r.ended_at_ms));
  row("Duration", r.started_at_ms ? format_duration(run_duration_ms(r, now_ms())) : "");
  row("Attempts", fmt::format("{} (max retries {})", r.attempts.size(),
                              r.max_retries < 0 ? std::string("unlimited") : std::to_string(r.max_retries)));
  if (r.timeout_minutes) row("Timeout", fmt::format("{} min", *r.timeout_minutes));
  row("Snapshot", r.snapshot_digest.empty() ? "" : fmt::format("sha256:{} ({} bytes)", r.snapshot_digest.substr(0, 16), r.snapshot_bytes));
  if (!r.alerts.empty()) out << "\nAlerts (stalls and stragglers)\n" << alert_lines(r);
  if (!r.volumes.empty()) {
    out << "\nVolumes (named by the workload; fetch one with: air fs cp -r dbfs:PATH DIR)\n";
    for (const auto& v : r.volumes)
      out << fmt::format("  {}  {}\n", v.path,
                         v.exists ? fmt::format("{} file(s), {} bytes", v.files, v.bytes) : std::string("(nothing yet)"));
  }
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
    size_t own = 0;  // the training code's metrics; the system ones are summed up below
    for (const auto& m : a.metrics) own += is_system_metric(m.key) ? 0 : 1;
    if (own > 0) {
      out << "  metrics (latest; history: air get run " << r.run_id << " --metrics):\n";
      for (const auto& m : a.metrics)
        if (!is_system_metric(m.key)) out << fmt::format("    {:<24} {:<14} step {}\n", m.key, format_metric(m.value), m.step);
    }
    if (&a == &r.attempts.back() && !system.empty()) out << "  system (latest, mean over the attempt):\n" << system;
    out << fmt::format("  {:<6}{:<11}{:<6}{:<9}{:<10}{}\n", "NODE", "STATE", "EXIT", "PID", "GPUS", "MESSAGE");
    for (const auto& n : a.nodes)
      out << fmt::format("  {:<6}{:<11}{:<6}{:<9}{:<10}{}\n", n.rank, to_string(n.state),
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

// The workspace's whole record plus the reference's fields (docs/cli.md, "JSON output"): status,
// started_at ("...+00:00" or null), duration_seconds (null before the start), attempt_number (0-based),
// dashboard_url (the run's web page), mlflow_url (null: the MLflow view is the web page's metrics).
nlohmann::json run_json(const api::RunInfo& r, const std::string& workspace_url) {
  nlohmann::json j = r;
  int64_t dur = run_duration_ms(r, now_ms());
  j["duration_ms"] = dur;
  j["status"] = r.state;
  j["started_at"] = r.started_at_ms ? nlohmann::json(format_iso(r.started_at_ms).substr(0, 19) + "+00:00")
                                    : nlohmann::json(nullptr);
  j["duration_seconds"] = r.started_at_ms ? nlohmann::json(std::llround(static_cast<double>(dur) / 1000.0))
                                          : nlohmann::json(nullptr);
  j["attempt_number"] = r.current_attempt > 0 ? r.current_attempt - 1 : 0;
  j["dashboard_url"] = web_url(workspace_url, r.run_id);
  j["mlflow_url"] = nullptr;
  return j;
}

}  // namespace

void setup_get(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("get", "Show a run: air get run <id> (or air get <id>)");
  auto args = std::make_shared<std::vector<std::string>>();
  cmd->add_option("args", *args, "run <id>, or <id>")->required()->type_name("run|RUN_ID");
  auto metrics = std::make_shared<bool>(false);
  cmd->add_flag("--metrics", *metrics, "Print the full history of each metric of the latest attempt");
  auto system = std::make_shared<bool>(false);
  cmd->add_flag("--system", *system,
                "With --metrics: the nodes' system metrics (system/node_N/...) too; without it, the training code's only");
  auto web = std::make_shared<bool>(false);
  cmd->add_flag("--web", *web, "Print the URL of the run's web page and open it in the desktop's browser");
  cmd->callback([&ctx, args, metrics, system, web] {
    std::string id;
    if (args->size() == 2 && (*args)[0] == "run") id = (*args)[1];
    else if (args->size() == 1 && (*args)[0] != "run") id = (*args)[0];
    else throw usage_error("expected 'air get run <id>' or 'air get <id>'");
    check_run_id(id);
    Session s = connect(ctx);
    api::RunInfo r = fetch_run(*s.client, id);
    if (*web) return show_web_page(ctx, web_url(s.target.url, r.run_id), true);
    if (*metrics) {
      const api::AttemptInfo* a = nullptr;
      for (const auto& x : r.attempts)
        if (!x.mlflow_run_id.empty()) a = &x;
      if (!a) throw Error("run " + id + " has no MLflow run yet", "metrics appear once an attempt has started");
      std::vector<api::Metric> keys;
      for (const auto& m : a->metrics)
        if (*system || !is_system_metric(m.key)) keys.push_back(m);
      nlohmann::json h = metric_history(*s.client, a->mlflow_run_id, keys);
      if (ctx.global.output == "json")
        print_json(ctx, {{"run_id", r.run_id}, {"attempt", a->number}, {"mlflow_run_id", a->mlflow_run_id},
                         {"metrics", h}});
      else
        print_history(*ctx.out, r, *a, h);
      return;
    }
    if (ctx.global.output == "json") {
      print_json(ctx, run_json(r, s.target.url));
    } else {
      print_run(*ctx.out, r, use_color(ctx, 1), fetch_system_summary(*s.client, r));
    }
  });
}

}  // namespace air::cli
