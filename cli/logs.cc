// `air logs <id>`: one node's log (default node 0, latest attempt). Follows an active run, tails a finished
// one; --all-nodes interleaves every node with a "[node N]" prefix; --download-to writes files.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/log_stream.h"
#include "cli/remote.h"
#include "cli/verbs.h"
#include "core/base/error.h"

namespace air::cli {

namespace fs = std::filesystem;

namespace {

struct LogsFlags {
  std::string id;
  int node = 0, attempt = 0;
  bool follow = false, no_follow = false, all_nodes = false, timestamps = false;
  int64_t tail = -1;
  std::string since, download_to;
};

int64_t parse_duration_ms(const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = s.substr(used);
  double mult = unit == "s" ? 1e3 : unit == "m" || unit.empty() ? 6e4 : unit == "h" ? 3.6e6 : unit == "d" ? 8.64e7 : -1;
  if (used == 0 || mult < 0 || v < 0)
    throw usage_error("invalid --since '" + s + "'", "use a number with s, m, h or d: --since 10m");
  return static_cast<int64_t>(v * mult);
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
  std::string base = fmt::format("{}/{}/attempt_{}", dir, r.run_id, attempt);
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
    *ctx.out << nlohmann::json{{"run_id", r.run_id}, {"attempt", attempt}, {"files", files}}.dump() << "\n";
  } else {
    *ctx.err << "Downloaded logs of " << nodes.size() << " node(s) to " << base << "\n";
    for (const auto& f : files) *ctx.err << "  node " << f["node"] << ": " << f["path"].get<std::string>() << "\n";
  }
}

void run_logs(const LogsFlags& f, Context& ctx, bool node_given) {
  check_run_id(f.id);
  if (f.node < 0) throw usage_error("invalid --node " + std::to_string(f.node) + ": must be >= 0");
  if (f.follow && f.no_follow) throw usage_error("--follow and --no-follow contradict each other");
  if (f.all_nodes && node_given) throw usage_error("--all-nodes and --node contradict each other");
  if (!f.download_to.empty() && (f.tail >= 0 || !f.since.empty()))
    throw usage_error("--download-to writes whole logs; it does not combine with --tail or --since");
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
    if (ctx.global.output == "json")
      *ctx.out << nlohmann::json{{"type", "ERROR"}, {"line", "no logs: run ended " + r.state}}.dump() << "\n";
    else
      *ctx.err << "No logs available for run " << f.id << ". It ended " << r.state
               << (r.status_message.empty() ? "" : ": " + r.status_message) << "\n";
    ctx.exit_code = r.state == "SUCCEEDED" ? kExitOk : kExitFailed;
    return;
  }
  int latest = r.current_attempt;
  int attempt = f.attempt > 0 ? f.attempt : latest;
  if (attempt > latest)
    throw usage_error(fmt::format("invalid --attempt {}: run {} has attempts 1 to {}", attempt, f.id, latest));
  if (f.node >= r.num_nodes)
    throw usage_error(fmt::format("invalid --node {}: run has {} node(s), numbered 0 to {}", f.node, r.num_nodes,
                                  r.num_nodes - 1));
  if (!f.download_to.empty()) return download(c, r, attempt, node_given ? std::optional<int>(f.node) : std::nullopt,
                                              f.download_to, ctx);
  bool active = !is_run_terminal(r.state) && attempt == latest;
  bool follow = f.follow || (active && !f.no_follow);
  std::optional<uint64_t> tail;
  if (f.tail >= 0) tail = static_cast<uint64_t>(f.tail);
  else if (!follow) tail = 10000;
  PrintOptions po;
  po.json = ctx.global.output == "json";
  po.color = !po.json && use_color(ctx, 1);
  po.timestamps = f.timestamps;
  po.prefix_node = f.all_nodes;
  if (!f.since.empty()) po.since_ms = now_ms() - parse_duration_ms(f.since);
  for (;;) {
    if (f.all_nodes) stream_all(c, f.id, attempt, r.num_nodes, follow, tail, po, *ctx.out);
    else {
      Cursor cur(f.node);
      stream_one(c, f.id, attempt, cur, follow, tail, po, *ctx.out);
    }
    if (!follow || f.attempt > 0) break;
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
  cmd->add_option("id", f->id, "Run id")->required()->type_name("RUN_ID");
  auto* node = cmd->add_option("--node", f->node, "Node rank (default 0)");
  cmd->add_option("--attempt", f->attempt, "Attempt number (default: the latest)")->check(CLI::PositiveNumber);
  cmd->add_flag("--follow", f->follow, "Keep following until the attempt ends");
  cmd->add_flag("--no-follow", f->no_follow, "Print what exists now and stop");
  cmd->add_option("--tail", f->tail, "Print the last N lines (default 10000 for a finished run)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--since", f->since, "Only lines newer than this (30s, 10m, 2h)");
  cmd->add_flag("--all-nodes", f->all_nodes, "Every node, each line prefixed with [node N]");
  cmd->add_flag("--timestamps", f->timestamps, "Print each line's time first");
  cmd->add_option("--download-to", f->download_to, "Write the logs to DIR/<run>/attempt_<k>/node_<n>.log")
      ->type_name("DIR");
  cmd->callback([&ctx, f, node] { run_logs(*f, ctx, node->count() > 0); });
}

}  // namespace air::cli
