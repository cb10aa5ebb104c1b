// `air run` after validation: snapshot upload, submit, and --watch.
#include "cli/run/submit.h"
#include "cli/run/watch.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/log_stream.h"
#include "cli/remote.h"
#include "core/wire/api.h"
#include "core/base/diagnostics.h"
#include "core/snapshot/snapshot.h"

namespace air::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string mb(uint64_t bytes) { return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6); }

uint64_t snapshot_limit_bytes() {
  if (const char* v = std::getenv("AIR_MAX_SNAPSHOT_MB"); v && *v) return std::strtoull(v, nullptr, 10) << 20;
  return 1024ull << 20;
}

struct UploadResult {
  std::string digest;
  uint64_t bytes = 0, uploaded = 0, files = 0;
};

UploadResult upload_snapshot(const Workload& w, Client& c, Context& ctx) {
  UploadResult u;
  if (!w.code_source || w.code_source->type != "snapshot" || w.code_source->root_path_resolved.empty()) return u;
  const CodeSource& cs = *w.code_source;
  SnapshotManifest m = scan_snapshot(cs.root_path_resolved, cs.include_paths);
  exclude_subtree(m, air_home(), "$AIR_HOME");
  u.files = m.files.size();
  uint64_t limit = snapshot_limit_bytes();
  if (m.total_bytes > limit) {
    std::string largest;
    for (size_t i = 0; i < m.largest.size() && i < 5; ++i)
      largest += fmt::format("\n    {} ({})", m.largest[i].path, mb(m.largest[i].size));
    throw Error(fmt::format("the snapshot of {} is {}, over the limit of {}; largest files:{}", cs.root_path_resolved,
                            mb(m.total_bytes), mb(limit), largest),
                "exclude them with a pattern per line in " + cs.root_path_resolved +
                    "/.airignore (or .gitignore), or raise the limit with AIR_MAX_SNAPSHOT_MB");
  }
  // The cache makes an unchanged tree cost a scan only: no file is read, no archive written.
  SnapshotArchive a = snapshot_with_cache(m, air_home() + "/cache/snapshots");
  u.digest = a.sha256;
  u.bytes = a.bytes;
  std::string path = std::string(api::kPrefix) + "/snapshots/" + a.sha256;
  if (c.head(path)) return u;
  bool show = ctx.global.output == "text" && stderr_is_tty();
  ProgressFn progress;
  if (show)
    progress = [&ctx, last = uint64_t(0)](uint64_t done, uint64_t total) mutable {
      if (total == 0 || (done != total && done - last < (1u << 20))) return;
      last = done;
      *ctx.err << fmt::format("\r  uploading snapshot: {:3d}% ({} of {})", static_cast<int>(done * 100 / total),
                              mb(done), mb(total))
               << std::flush;
    };
  c.put_file(path, a.path, progress);
  if (show) *ctx.err << "\n";
  u.uploaded = a.bytes;
  return u;
}

}  // namespace

int submit_workload(const Workload& w, const RunOptions& opts, Context& ctx) {
  // Secrets are checked by the workspace at submit (by name): a missing one comes back as a diagnostic.
  Session s = connect(ctx);
  bool text = ctx.global.output == "text";
  if (text) *ctx.err << "Submitting experiment: " << w.experiment_name << "\n";
  UploadResult up = upload_snapshot(w, *s.client, ctx);
  if (text && !up.digest.empty())
    *ctx.err << fmt::format("  snapshot {} ({} files, {}): {}\n", up.digest.substr(0, 12), up.files, mb(up.bytes),
                            up.uploaded ? "uploaded " + mb(up.uploaded) : "already in the workspace");
  api::SubmitRequest req;
  req.workload_yaml = w.source_text;
  req.file_name = w.source_file;
  req.base_dir = fs::absolute(fs::path(w.source_file)).parent_path().string();
  req.snapshot_digest = up.digest;
  req.snapshot_bytes = up.bytes;
  req.idempotency_key = opts.idempotency_key;
  api::RunInfo run;
  try {
    run = s.client->post_json(std::string(api::kPrefix) + "/runs", req).get<api::RunInfo>();
  } catch (const ApiError& e) {
    if (e.diagnostics().empty()) throw;
    *ctx.err << render_all(e.diagnostics(), w.source_file, "nothing was submitted");
    return kExitUsage;
  }
  for (const auto& n : run.notices) *ctx.err << "air: note: " << n << "\n";  // e.g. no private /Volumes here
  if (!text) {
    *ctx.out << json{{"type", "SUBMITTED"},        {"ts", format_iso(now_ms())},
                     {"run_id", run.run_id},       {"status", run.state},
                     {"snapshot_digest", up.digest}, {"snapshot_uploaded_bytes", up.uploaded},
                     {"workspace", s.target.url}}
                    .dump()
             << "\n";
  } else {
    *ctx.out << "Submitted run " << run.run_id << " (" << run.num_nodes << " node(s) of " << run.accelerator_type
             << ") to the " << s.target.source << "\n";
    if (!opts.watch)
      *ctx.err << "  follow it: air logs " << run.run_id << " --follow\n  status:    air get run " << run.run_id
               << "\n";
  }
  ctx.out->flush();
  if (!opts.watch) return kExitOk;
  return watch_run(*s.client, run.run_id, ctx);
}

namespace {

std::atomic<int> g_interrupts{0};
void on_sigint(int) { g_interrupts.fetch_add(1); }

// Asks on the terminal whether to cancel; without a terminal the answer is "just stop watching".
bool ask_cancel(const std::string& run_id, Context& ctx) {
  if (!::isatty(0) || !stderr_is_tty()) return false;
  *ctx.err << "\nCancel run " << run_id << "? [y/N] (N stops watching; the run goes on): " << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  return !answer.empty() && (answer[0] == 'y' || answer[0] == 'Y');
}

}  // namespace

int watch_run(Client& c, const std::string& run_id, Context& ctx) {
  bool json_out = ctx.global.output == "json";
  struct sigaction sa {}, old {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old);
  g_interrupts = 0;
  struct Restore {
    struct sigaction old;
    ~Restore() { ::sigaction(SIGINT, &old, nullptr); }
  } restore{old};

  if (!json_out) *ctx.err << "Monitoring run and streaming node 0's log (Ctrl-C to stop)...\n";
  PrintOptions po;
  po.json = json_out;
  po.color = !json_out && use_color(ctx, 1);
  std::string last_state;
  int attempt = 0;
  uint64_t offset = 0;
  std::string partial;
  bool log_done = false;
  for (;;) {
    if (g_interrupts > 0) {
      if (ask_cancel(run_id, ctx)) {
        c.post_json(std::string(api::kPrefix) + "/runs/" + run_id + "/cancel", json::object());
        *ctx.err << "cancellation requested for run " << run_id << "\n";
      } else {
        *ctx.err << "\nstopped watching; run " << run_id << " goes on (air logs " << run_id << " --follow)\n";
      }
      return kExitInterrupted;
    }
    api::RunInfo r = fetch_run(c, run_id);
    if (r.state != last_state) {
      if (json_out)
        *ctx.out << json{{"type", "STATUS"}, {"ts", format_iso(now_ms())}, {"run_id", run_id}, {"status", r.state},
                         {"previous_status", last_state.empty() ? json(nullptr) : json(last_state)},
                         {"message", r.status_message}}
                        .dump()
                 << "\n";
      else
        *ctx.err << "status: " << r.state << (r.status_message.empty() ? "" : " (" + r.status_message + ")") << "\n";
      last_state = r.state;
    }
    if (r.current_attempt > attempt && (attempt == 0 || log_done)) {
      if (attempt > 0) {
        print_log_lines(*ctx.out, partial, "", 0, po, true);
        if (!json_out) *ctx.err << "── attempt " << r.current_attempt << " ──\n";
      }
      attempt = r.current_attempt;
      offset = 0;
      log_done = false;
    }
    bool terminal = is_run_terminal(r.state);
    if (attempt > 0 && !log_done) {
      LogPoll p = poll_log(c, run_id, attempt, 0, offset, std::nullopt, terminal ? 0 : 300);
      print_log_lines(*ctx.out, partial, p.data, 0, po, p.done && p.end() >= p.size);
      ctx.out->flush();
      offset = p.end();
      log_done = p.done && offset >= p.size;
      if (!log_done) continue;
    }
    if (terminal && (attempt == 0 || log_done)) {
      if (json_out)
        *ctx.out << json{{"v", 1}, {"ts", format_iso(now_ms())},
                         {"data", {{"status", r.state}, {"run_id", run_id}, {"message", r.status_message}}}}
                        .dump()
                 << "\n";
      else
        *ctx.err << "run " << run_id << " ended: " << r.state
                 << (r.status_message.empty() ? "" : " (" + r.status_message + ")") << "\n";
      return r.state == "SUCCEEDED" ? kExitOk : kExitFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace air::cli
