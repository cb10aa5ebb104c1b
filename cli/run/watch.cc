// `air run --watch`: status changes and node 0's log of the current attempt until the run ends; Ctrl-C
// asks whether to cancel the run or only stop watching.
#include "cli/run/watch.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <set>
#include <thread>

#include "cli/runs/log_stream.h"
#include "cli/output.h"
#include "cli/format.h"
#include "cli/remote.h"
#include "core/wire/api.h"

namespace air::cli {

using nlohmann::json;

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

  if (!json_out) {
    *ctx.err << "Monitoring run and streaming logs... (node 0; Ctrl-C to stop)\n";
    *ctx.err << "── Logs ";
    for (int i = 8; i < 60; ++i) *ctx.err << "─";  // the reference's 60-column rule
    *ctx.err << "\n";
  }
  PrintOptions po;
  po.json = json_out;
  po.color = !json_out && use_color(ctx, 1);
  std::string last_state;
  int attempt = 0;
  uint64_t offset = 0;
  std::string partial;
  bool log_done = false;
  std::set<std::pair<int64_t, std::string>> alerts_seen;  // stall and straggler alerts already printed
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
        print_json_line(ctx, {{"type", "STATUS"}, {"ts", rfc3339_now()}, {"run_id", run_id}, {"status", r.state},
                              {"previous_status", last_state.empty() ? json(nullptr) : json(last_state)},
                              {"message", r.status_message}});
      else
        *ctx.err << "status: " << r.state << (r.status_message.empty() ? "" : " (" + r.status_message + ")") << "\n";
      last_state = r.state;
    }
    // A stall or straggler alert (core/health/stall.h) is said once, in the stream the user watches.
    for (const auto& a : r.alerts) {
      if (!a.active || !alerts_seen.insert({a.at_ms, a.kind + std::to_string(a.node)}).second) continue;
      if (json_out)
        print_json_line(ctx, {{"type", "ALERT"}, {"ts", rfc3339_now()}, {"run_id", run_id}, {"kind", a.kind},
                              {"attempt", a.attempt}, {"node", a.node}, {"message", a.message}});
      else
        *ctx.err << "alert: " << a.message << "\n";
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
        print_json_line(ctx, envelope({{"status", r.state}, {"run_id", run_id},
                                       {"dashboard_url", web_url(c.base_url(), run_id)},
                                       {"message", r.status_message}}));
      else
        *ctx.err << "run " << run_id << " ended: " << r.state
                 << (r.status_message.empty() ? "" : " (" + r.status_message + ")") << "\n";
      return r.state == "SUCCEEDED" ? kExitOk : kExitFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace air::cli
