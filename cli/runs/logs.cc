// `air logs <id>`: one node's log (default node 0, latest attempt). Follows an active run, tails a finished
// one; --all-nodes interleaves every node with a "[node N]" prefix; --download-to writes DIR/logs/node_<n>.log.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/runs/log_stream.h"
#include "cli/output.h"
#include "cli/format.h"
#include "cli/remote.h"
#include "cli/verbs.h"
#include "core/base/error.h"
#include "core/base/time.h"

namespace air::cli {

namespace fs = std::filesystem;

namespace {

// The reference's flags (--lines, --minutes, --retry, --download-to) and ours kept as aliases (--tail,
// --since, --attempt); counts of each as given, to apply the reference's combination rules.
struct LogsFlags {
  std::string id;
  int node = 0, attempt = 0, retry = -1;
  bool follow = false, no_follow = false, all_nodes = false, timestamps = false;
  int64_t lines = -1, minutes = -1;
  std::string since, download_to;
  bool node_given = false, lines_given = false, retry_given = false, minutes_given = false;
};

// --since: a duration (core/base/time.h); a bare number is minutes.
int64_t since_ms(const std::string& s) {
  std::optional<int64_t> ms = parse_duration_ms(s, 'm');
  if (!ms) throw usage_error("invalid --since '" + s + "'", "use a number with s, m, h or d: --since 10m");
  return *ms;
}

struct Cursor {
  explicit Cursor(int n) : node(n) {}
  int node;
  uint64_t offset = 0;
  std::string partial;
  bool done = false;
};

// Prints one node until its attempt ends (follow) or what exists now (tail).
void stream_one(Client& c, const std::string& id, int attempt, Cursor& cur, bool follow,
                std::optional<uint64_t> tail, const PrintOptions& po, std::ostream& out) {
  bool first = true;
  for (;;) {
    std::optional<uint64_t> off;
    if (!first || !tail) off = cur.offset;
    LogPoll p = poll_log(c, id, attempt, cur.node, off, first ? tail : std::nullopt, follow ? 1000 : 0);
    first = false;
    cur.offset = p.end();
    bool at_end = cur.offset >= p.size;
    print_log_lines(out, cur.partial, p.data, cur.node, po, p.done && at_end);
    out.flush();
    if (at_end && (p.done || !follow)) {
      cur.done = true;
      return;
    }
  }
}

void stream_all(Client& c, const std::string& id, int attempt, int nodes, bool follow, std::optional<uint64_t> tail,
                const PrintOptions& po, std::ostream& out) {
  std::vector<Cursor> cs;
  for (int n = 0; n < nodes; ++n) cs.emplace_back(n);
  bool first = true;
  for (;;) {
    bool any = false, all_done = true;
    for (auto& cur : cs) {
      if (cur.done) continue;
      std::optional<uint64_t> off;
      if (!first || !tail) off = cur.offset;
      LogPoll p = poll_log(c, id, attempt, cur.node, off, first ? tail : std::nullopt, 0);
      cur.offset = p.end();
      bool at_end = cur.offset >= p.size;
      any = any || !p.data.empty();
      print_log_lines(out, cur.partial, p.data, cur.node, po, p.done && at_end);
      if (at_end && (p.done || !follow)) cur.done = true;
      all_done = all_done && cur.done;
    }
    first = false;
    out.flush();
    if (all_done) return;
    if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void download(Client& c, const api::RunInfo& r, int attempt, std::optional<int> node, const std::string& dir,
              Context& ctx) {
  std::vector<int> nodes;
  if (node) nodes.push_back(*node);
  else for (int n = 0; n < r.num_nodes; ++n) nodes.push_back(n);
  std::string base = dir + "/logs";  // the reference's layout: DIR/logs/node_<n>.log
  fs::create_directories(base);
  PrintOptions po;
  nlohmann::json files = nlohmann::json::array();
  for (int n : nodes) {
    std::string path = fmt::format("{}/node_{}.log", base, n), tmp = path + ".part";
    {
      std::ofstream f(tmp, std::ios::binary);
      Cursor cur(n);
      stream_one(c, r.run_id, attempt, cur, false, std::nullopt, po, f);
      if (!f) throw Error("cannot write " + tmp);
    }
    fs::rename(tmp, path);
    files.push_back({{"node", n}, {"path", path}});
  }
  if (ctx.global.output == "json") {
    print_json(ctx, {{"run_id", r.run_id}, {"retry", attempt - 1}, {"attempt", attempt}, {"files", files}});
  } else {
    *ctx.err << "Downloaded logs of " << nodes.size() << " node(s) to " << base << "\n";
    for (const auto& f : files) *ctx.err << "  node " << f["node"] << ": " << f["path"].get<std::string>() << "\n";
  }
}

// The reference's argument rules, in its order and words (docs/cli.md, "air logs").
void check_logs_flags(LogsFlags& f) {
  check_run_id(f.id);
  if (f.node < 0) throw usage_error(fmt::format("invalid --node {}: must not be negative", f.node));
  if (f.lines_given && f.lines < 0) throw usage_error(fmt::format("invalid --lines {}: must not be negative", f.lines));
  if (f.minutes_given && f.minutes < 0)
    throw usage_error(fmt::format("invalid --minutes {}: must not be negative", f.minutes));
  bool window = f.minutes_given || !f.since.empty();
  if (!f.download_to.empty() && (f.lines_given || window))
    throw usage_error("--download-to writes complete logs, so it cannot be combined with --lines or --minutes");
  if (f.lines_given && window)
    throw usage_error("cannot combine --lines with --minutes: --lines keeps the last N lines, --minutes the lines "
                      "of a time window",
                      "use one of them");
  if (f.minutes_given && !f.since.empty()) throw usage_error("--minutes and --since are the same flag; give one");
  if (f.follow && f.no_follow) throw usage_error("--follow and --no-follow contradict each other");
  if (f.all_nodes && f.node_given) throw usage_error("--all-nodes and --node contradict each other");
  if (f.attempt > 0 && f.retry_given) throw usage_error("--attempt K is --retry K-1; give one of them");
  if (f.attempt > 0) f.retry = f.attempt - 1;
  if (f.retry < -1) throw usage_error(fmt::format("invalid retry {}: use 0 for the first attempt, -1 for the latest", f.retry));
}

void run_logs(LogsFlags f, Context& ctx) {
  check_logs_flags(f);
  bool node_given = f.node_given;
  Session s = connect(ctx);
  Client& c = *s.client;
  api::RunInfo r = fetch_run(c, f.id);
  // A run that has not started yet has nothing to show; when following, wait for its first attempt.
  while (r.current_attempt == 0 && !is_run_terminal(r.state) && !f.no_follow) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r = fetch_run(c, f.id);
  }
  if (r.attempts.empty() && !is_run_terminal(r.state)) {
    *ctx.err << "Run " << f.id << " has not started yet (" << r.state << "): no logs so far\n";
    return;
  }
  if (r.attempts.empty()) {
    std::string msg = "No logs available for run " + f.id + ". Run terminated in state " + r.state +
                      (r.status_message.empty() ? "" : ": " + r.status_message);
    if (ctx.global.output == "json")
      print_json_line(ctx, {{"type", "ERROR"}, {"ts", rfc3339_now()}, {"node", f.node}, {"line", msg}});
    else
      *ctx.err << msg << "\n";
    ctx.exit_code = r.state == "SUCCEEDED" ? kExitOk : kExitFailed;
    return;
  }
  int latest = r.current_attempt;  // attempts count from 1 here; the reference's retries from 0
  int attempt = f.retry >= 0 ? f.retry + 1 : latest;
  if (attempt > latest)
    throw usage_error(fmt::format("invalid retry {}: available retries are 0 to {}", f.retry, latest - 1),
                      "--attempt K is --retry K-1");
  if (f.node >= r.num_nodes)
    throw usage_error(fmt::format("invalid --node {}: run has {} node(s), indexed 0 to {}", f.node, r.num_nodes,
                                  r.num_nodes - 1));
  if (!f.download_to.empty()) return download(c, r, attempt, node_given ? std::optional<int>(f.node) : std::nullopt,
                                              f.download_to, ctx);
  bool active = !is_run_terminal(r.state) && attempt == latest;
  bool follow = f.follow || (active && !f.no_follow);
  std::optional<uint64_t> tail;
  if (f.lines_given) tail = static_cast<uint64_t>(f.lines);
  else if (!follow) tail = 10000;
  if (f.lines_given && f.lines == 0 && !follow) {  // the reference: an explicit 0 prints nothing
    ctx.exit_code = r.state == "SUCCEEDED" ? kExitOk : kExitFailed;
    return;
  }
  PrintOptions po;
  po.json = ctx.global.output == "json";
  po.color = !po.json && use_color(ctx, 1);
  po.timestamps = f.timestamps;
  po.prefix_node = f.all_nodes;
  if (!f.since.empty()) po.since_ms = now_ms() - since_ms(f.since);
  if (f.minutes_given) po.since_ms = now_ms() - f.minutes * 60000;
  for (;;) {
    if (f.all_nodes) stream_all(c, f.id, attempt, r.num_nodes, follow, tail, po, *ctx.out);
    else {
      Cursor cur(f.node);
      stream_one(c, f.id, attempt, cur, follow, tail, po, *ctx.out);
    }
    if (!follow || f.retry >= 0) break;
    // Following the latest attempt: when the run retries, go on with the next attempt's log.
    r = fetch_run(c, f.id);
    while (!is_run_terminal(r.state) && r.current_attempt == attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      r = fetch_run(c, f.id);
    }
    if (r.current_attempt == attempt) break;
    attempt = r.current_attempt;
    tail.reset();
    if (!po.json) *ctx.err << "── attempt " << attempt << " ──\n";
  }
  r = fetch_run(c, f.id);
  ctx.exit_code = (!is_run_terminal(r.state) || r.state == "SUCCEEDED") ? kExitOk : kExitFailed;
}

}  // namespace

void setup_logs(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("logs", "Show a node's log: follows an active run, tails a finished one");
  auto f = std::make_shared<LogsFlags>();
  cmd->add_option("id", f->id, "Run id")->required()->type_name("JOB_RUN_ID");
  // The reference's names first (as `databricks air logs` has them), then ours.
  auto* node = cmd->add_option("--node", f->node, "Fetch logs from this node (default 0)");
  auto* lines = cmd->add_option("--lines,--tail", f->lines,
                                "For completed runs, print the last N lines (default 10000; an explicit 0 prints "
                                "nothing). --tail is the same");
  auto* minutes = cmd->add_option("--minutes", f->minutes, "Fetch only logs from the last N minutes")->type_name("N");
  auto* retry = cmd->add_option("--retry", f->retry, "View logs from a specific retry attempt (0-based); -1 means latest");
  cmd->add_option("--download-to", f->download_to, "Download all logs to DIR/logs/node_<n>.log instead of printing")
      ->type_name("DIR");
  cmd->add_option("--attempt", f->attempt, "Attempt number, 1-based (= --retry K-1)")->check(CLI::PositiveNumber);
  cmd->add_option("--since", f->since, "Only lines newer than this (30s, 10m, 2h; --minutes N is N m)");
  cmd->add_flag("--follow", f->follow, "Keep following until the attempt ends");
  cmd->add_flag("--no-follow", f->no_follow, "Print what exists now and stop");
  cmd->add_flag("--all-nodes", f->all_nodes, "Every node, each line prefixed with [node N]");
  cmd->add_flag("--timestamps", f->timestamps, "Print each line's time first");
  cmd->callback([&ctx, f, node, lines, retry, minutes] {
    f->node_given = node->count() > 0;
    f->lines_given = lines->count() > 0;
    f->retry_given = retry->count() > 0;
    f->minutes_given = minutes->count() > 0;
    run_logs(*f, ctx);
  });
}

}  // namespace air::cli
