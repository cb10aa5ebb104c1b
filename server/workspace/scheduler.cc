// The gang scheduler half of Workspace: node reports, failure handling, stop/grace, retries, timeouts,
// lost agents. The log endpoints are in server/workspace/logs.cc.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "core/wire/run_state.h"
#include "server/workspace/services.h"
#include "server/workspace/workspace.h"

namespace air::server {

api::NodeStatusReply Workspace::node_status(const std::string& id, int attempt, int node,
                                            const api::NodeStatusReport& rep) {
  static const std::set<std::string> kStates = {"STARTING", "RUNNING", "SUCCEEDED", "FAILED"};
  if (!kStates.count(rep.state))
    throw HttpError(400, "INVALID_ARGUMENT", "unknown node state '" + rep.state + "'");
  std::lock_guard<std::mutex> g(mu_);
  RunRecord& r = find(id);
  check_node(r, attempt, node);
  api::AttemptInfo* a = current(r);
  // A report for an attempt that is over (or a run that ended) can only be answered with "stop".
  if (!a || a->number != attempt || over(*a)) return {"stop"};
  runtime_[{id, attempt, node}].last_seen_ms = now();
  health_.heartbeat(id, attempt, node, rep, now());
  api::NodeInfo& n = a->nodes.at(node);
  if (is_node_terminal(n.state)) return {"stop"};
  bool changed = n.state != rep.state || (rep.pid && n.pid != rep.pid);
  if (rep.pid) n.pid = rep.pid;
  if (!rep.host.empty()) n.host = rep.host;
  if (rep.state == "STARTING" || rep.state == "RUNNING") {
    n.state = rep.state;
    if (rep.state == "RUNNING" && !n.running_at_ms) n.running_at_ms = now();
    if (rep.state == "RUNNING" && r.info.state == "PENDING") {
      r.info.state = "RUNNING";
      if (!r.info.started_at_ms) r.info.started_at_ms = now();
      changed = true;
    }
    if (rep.state == "RUNNING" && a->state == "PENDING") a->state = "RUNNING";
    if (changed) {
      bool all_running = true;
      for (const auto& x : a->nodes) all_running = all_running && x.state == "RUNNING";
      if (all_running && r.stop_kind.empty()) r.info.status_message = "all nodes running";
      store_.save_run_node(r, attempt, node);  // this node's row and the run's head, not every node's
      logs_.wake();
    }
  } else {
    n.state = rep.state;
    n.exit_code = rep.exit_code;
    n.message = rep.message;
    if (rep.state == "FAILED") {
      std::string why = rep.message.empty()
                            ? fmt::format("node {} failed with exit code {}", node, rep.exit_code.value_or(-1))
                            : fmt::format("node {} failed: {}", node, rep.message);
      if (rep.exit_code && rep.message.empty()) why = fmt::format("node {} exited with code {}", node, *rep.exit_code);
      node_failed(r, node, rep.exit_code, why, rep.last_lines);
    }
    maybe_finish_attempt(r);
    // An attempt that ended (or a stop that began) may have changed every node: write them all.
    if (over(*a) || !r.stop_kind.empty()) save(r);
    else store_.save_run_node(r, attempt, node);
    logs_.wake();
  }
  return {r.stop_kind.empty() ? "continue" : "stop"};
}

void Workspace::node_failed(RunRecord& r, int rank, std::optional<int> exit_code, const std::string& why,
                            const std::vector<std::string>& lines) {
  api::AttemptInfo* a = current(r);
  if (!a) return;
  api::NodeInfo& n = a->nodes.at(rank);
  if (!is_node_terminal(n.state)) {
    n.state = "FAILED";
    n.exit_code = exit_code;
    n.message = why;
  }
  // Nodes stopped by the workspace also report FAILED; only the first genuine failure is the cause.
  if (!r.stop_kind.empty() || a->failing_node) return;
  a->failing_node = rank;
  a->failing_exit_code = exit_code;
  a->failing_lines = lines;
  a->reason = why;
  begin_stop(r, "gang", why);
}

void Workspace::begin_stop(RunRecord& r, const std::string& kind, const std::string& reason) {
  r.stop_kind = kind;
  r.stop_reason = reason;
  r.stop_started_ms = now();
  r.info.status_message = kind == "cancel" ? "canceling: stopping every node"
                          : kind == "timeout" || kind == "preempt" ? reason + "; stopping every node"
                                              : reason + "; stopping the other nodes";
  // A batch job none of whose agents has started (still queued) cannot hear "stop": remove it now.
  if (api::AttemptInfo* a = current(r); a && !a->job_id.empty()) {
    bool none_started = true;
    for (const auto& n : a->nodes) none_started = none_started && n.state == "PENDING";
    if (none_started) job_cancels_.push_back({a->job_id, 0});
  }
  maybe_finish_attempt(r);
  save(r);
  logs_.wake();
}

void Workspace::maybe_finish_attempt(RunRecord& r) {
  api::AttemptInfo* a = current(r);
  if (!a || over(*a)) return;
  for (const auto& n : a->nodes)
    if (!is_node_terminal(n.state)) return;
  finish_attempt(r);
}

// An attempt's end, in three steps: give back what it held, name how it ended, and decide what the run
// does next (end, or wait in the queue again). Then the queue moves at once.
void Workspace::finish_attempt(RunRecord& r) {
  api::AttemptInfo* a = current(r);
  a->ended_at_ms = now();
  health_.forget(r.info, a->number);
  release_attempt(r, *a);
  std::string end = attempt_end(r, *a);
  services_->end_mlflow_run(a->mlflow_run_id, end);
  settle_run(r, *a, end);
  save(r);
  schedule();  // its GPUs are free (and it may be queued again): the queue moves now, not on the next tick
  logs_.wake();
}

// Agents get the grace to exit, GPUs go back, the batch job is removed, the attempt's token is revoked.
void Workspace::release_attempt(RunRecord& r, const api::AttemptInfo& a) {
  for (int n = 0; n < static_cast<int>(r.agent_pids.size()); ++n)
    if (r.agent_pids[n] > 0) lingering_.push_back({r.agent_pids[n], now() + opts_.stop_grace_ms});
  release_gpus(r);
  // The batch job may still be ending (or hold processes that did not stop): scancel it; a no-op when done.
  if (!a.job_id.empty()) job_cancels_.push_back({a.job_id, 0});
  auth_->revoke_node_token(r.info.run_id, a.number);
}

std::string Workspace::attempt_end(const RunRecord& r, const api::AttemptInfo& a) const {
  bool all_ok = true;
  for (const auto& n : a.nodes) all_ok = all_ok && n.state == "SUCCEEDED";
  const std::string& kind = r.stop_kind;
  return kind.empty() && all_ok ? "SUCCEEDED"
         : kind == "cancel"     ? "CANCELED"
         : kind == "timeout"    ? "TIMED_OUT"
         : kind == "preempt"    ? "PREEMPTED"
                                : "FAILED";
}

void Workspace::settle_run(RunRecord& r, api::AttemptInfo& a, const std::string& end) {
  a.state = end;
  restarted_runs_.erase(r.info.run_id);
  auto end_run = [&](const std::string& message) {
    r.info.state = end;
    r.info.status_message = message;
    r.info.ended_at_ms = now();
    r.stop_kind.clear();
  };
  if (end == "SUCCEEDED") {
    end_run(fmt::format("all {} node(s) succeeded", a.nodes.size()));
  } else if (end == "CANCELED") {
    a.reason = a.reason.empty() ? "canceled" : a.reason;
    end_run("canceled by request");
  } else if (end == "TIMED_OUT") {
    a.reason = r.stop_reason;
    end_run(r.stop_reason);
  } else if (end == "PREEMPTED") {
    // Not the run's end and not a failure: no retry is spent; the run waits again with its place.
    a.reason = r.stop_reason;
    r.info.state = "PENDING";
    requeue(r, fmt::format("attempt {} {}", a.number, r.stop_reason));
  } else {
    if (a.reason.empty()) a.reason = r.stop_reason;
    int failures = 0;  // preempted attempts were not failures: they spend no retry
    for (const auto& x : r.info.attempts) failures += x.state == "PREEMPTED" ? 0 : 1;
    if (r.info.max_retries < 0 || failures <= r.info.max_retries)
      requeue(r, fmt::format("attempt {} failed ({}); retrying", a.number, a.reason));
    else
      end_run(a.reason + (a.number > 1 ? fmt::format(" (after {} attempts)", a.number) : ""));
  }
}

void Workspace::tick() {
  prune_audit();
  run_launches();
  poll_jobs();
  run_job_cancels();
  std::lock_guard<std::mutex> g(mu_);
  for (RunRecord* r : runs_.prune_active()) tick_run(*r);  // the ended leave the index here, and only here
  schedule();
  // Agents of ended attempts normally exit on their own; whatever is left after the grace is killed, so
  // a run never leaves a process behind.
  int64_t t = now();
  std::vector<Lingering> keep;
  for (const auto& l : lingering_) {
    if (!backend_->agent_alive(l.agent_pid)) continue;
    if (t >= l.deadline_ms) backend_->kill_node(l.agent_pid);
    else keep.push_back(l);
  }
  lingering_ = std::move(keep);
}

void Workspace::tick_run(RunRecord& r) {
  api::AttemptInfo* a = current(r);
  if (!a || waiting(r)) return;  // queued: schedule() starts it
  if (over(*a)) return;
  int64_t t = now();
  if (!r.stop_kind.empty()) {
    if (t - r.stop_started_ms < opts_.stop_grace_ms) {
      // Nodes that will never answer (their agent is gone) need not hold the stop up.
      for (auto& n : a->nodes)
        if (!is_node_terminal(n.state) && n.rank < static_cast<int>(r.agent_pids.size()) &&
            r.agent_pids[n.rank] > 0 && !backend_->agent_alive(r.agent_pids[n.rank])) {
          n.state = "LOST";
          n.message = "agent exited while being stopped";
        }
      maybe_finish_attempt(r);
      return;
    }
    for (auto& n : a->nodes)
      if (!is_node_terminal(n.state)) {
        if (n.rank < static_cast<int>(r.agent_pids.size())) backend_->kill_node(r.agent_pids[n.rank]);
        n.state = "LOST";
        n.message = fmt::format("killed by the workspace: no exit {} s after stop", opts_.stop_grace_ms / 1000);
      }
    finish_attempt(r);
    return;
  }
  if (r.info.timeout_minutes && r.info.started_at_ms &&
      t - r.info.started_at_ms >= int64_t(*r.info.timeout_minutes) * opts_.minute_ms) {
    begin_stop(r, "timeout", fmt::format("timed out after {} minute(s)", *r.info.timeout_minutes));
    return;
  }
  if (check_stall(r, *a, t)) return;
  bool restarted = restarted_runs_.count(r.info.run_id) > 0;
  for (auto& n : a->nodes) {
    if (is_node_terminal(n.state)) continue;
    int pid = n.rank < static_cast<int>(r.agent_pids.size()) ? r.agent_pids[n.rank] : 0;
    auto& rt = runtime_[{r.info.run_id, a->number, n.rank}];
    if (pid > 0 && !backend_->agent_alive(pid)) {
      n.state = "LOST";
      node_failed(r, n.rank, std::nullopt,
                  fmt::format("the agent of node {} exited without reporting an end (see its agent log)", n.rank), {});
    } else if (t - rt.last_seen_ms > opts_.heartbeat_timeout_ms) {
      n.state = "LOST";
      node_failed(r, n.rank, std::nullopt,
                  restarted ? fmt::format("the agent of node {} did not re-attach within {} s after the workspace "
                                          "restarted",
                                          n.rank, opts_.heartbeat_timeout_ms / 1000)
                            : fmt::format("lost node {}: no heartbeat for {} s", n.rank,
                                          opts_.heartbeat_timeout_ms / 1000),
                  {});
    }
    if (r.stop_kind.empty() == false) break;
  }
  maybe_finish_attempt(r);
}

// The stall watchdog and the straggler alert (rules: core/health/stall.h; state: server/health/run_health.h):
// a running node whose log has not grown and whose GPUs sat idle for stall_timeout_minutes is declared
// failed (its command may be stuck in a collective forever, which no exit code or heartbeat reveals); at
// half that it is alerted. The clock starts at the node's first check, so a restarted workspace gives every
// node a full period again.
bool Workspace::check_stall(RunRecord& r, api::AttemptInfo& a, int64_t t) {
  std::vector<int64_t> last_output(a.nodes.size());
  for (const auto& n : a.nodes) last_output[n.rank] = runtime_[{r.info.run_id, a.number, n.rank}].last_output_ms;
  health::WatchResult w = health_.watch(r.info, a, last_output, t, opts_.minute_ms);
  if (w.stalled) {
    node_failed(r, w.stalled->rank, std::nullopt, w.stalled->message, {});
    maybe_finish_attempt(r);
    return true;
  }
  if (w.changed) {
    save(r);
    logs_.wake();
  }
  return false;
}

}  // namespace air::server
