// The attempt lifecycle (lifecycle.h): starting attempts, node reports, failure handling, stop and grace,
// retries, timeouts, lost agents, the tick. A run's current attempt ends in one of five ways: every node
// succeeded; a node failed or was lost (gang stop, then retry while retries remain); cancel; timeout;
// preemption (queued again without spending a retry). Every state change is written to SQLite before it is
// answered, so a restarted workspace resumes. Batch jobs: lifecycle_jobs.cc; the log routes: lifecycle_logs.cc.
#include "server/workspace/lifecycle.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/base/host.h"
#include "core/sandbox/sandbox.h"
#include "core/wire/run_state.h"
#include "server/workspace/errors.h"
#include "server/workspace/isolation.h"
#include "server/workspace/run_spec.h"
#include "server/workspace/services.h"

namespace air::server {

namespace {

HttpError not_found(const std::string& what) { return HttpError(404, "NOT_FOUND", what); }

}  // namespace

Lifecycle::Lifecycle(Parts p)
    : opts_(p.opts),
      backend_(p.backend),
      store_(p.store),
      logs_(p.logs),
      runs_(p.runs),
      queue_(p.queue),
      auth_(p.auth),
      services_(p.services),
      volume_access_(p.volume_access),
      volumes_(p.volumes),
      identity_(p.identity) {}

void Lifecycle::set_url(const std::string& url) {
  std::lock_guard<std::mutex> g(runs_.mu());
  url_ = url;
}

api::AttemptInfo* Lifecycle::current(RunRecord& r) {
  for (auto& a : r.info.attempts)
    if (a.number == r.info.current_attempt) return &a;
  return nullptr;
}

void Lifecycle::check_node(const RunRecord& r, int attempt, int node) const {
  for (const auto& a : r.info.attempts)
    if (a.number == attempt) {
      if (node < 0 || node >= static_cast<int>(a.nodes.size()))
        throw not_found(fmt::format("run {} attempt {} has no node {}", r.info.run_id, attempt, node));
      return;
    }
  throw not_found(fmt::format("run {} has no attempt {}", r.info.run_id, attempt));
}

void Lifecycle::load() {
  // Agents keep running while the workspace is down; give each one a full heartbeat window to re-attach.
  for (RunRecord* rp : runs_.active()) {
    RunRecord& r = *rp;
    const std::string& id = r.info.run_id;
    if (auto* a = current(r)) {
      restarted_runs_.insert(id);
      for (const auto& n : a->nodes) runtime_[{id, a->number, n.rank}].last_seen_ms = now();
      if (!Queue::waiting(r) && !over(r, *a)) queue_.claim(*a);
    }
  }
}

void Lifecycle::schedule() {
  if (scheduling_) {
    schedule_again_ = true;
    return;
  }
  scheduling_ = true;
  try {
    do {
      schedule_again_ = false;
      schedule_pass();
    } while (schedule_again_);
  } catch (...) {
    scheduling_ = false;
    throw;
  }
  scheduling_ = false;
}

void Lifecycle::schedule_pass() {
  sched::Decisions d = queue_.decide();
  for (const auto& p : d.preemptions)
    preempt(runs_.find(p.victim), p.reclaim ? fmt::format("to give borrowed quota back to run {}", p.for_job)
                                            : fmt::format("by CRITICAL run {}", p.for_job));
  for (const auto& s : d.starts)
    if (RunRecord& r = runs_.find(s.id); Queue::waiting(r)) start_attempt(r);
  if (queue_.show_waiting(d, runs_)) logs_.wake();
}

void Lifecycle::preempt(RunRecord& r, const std::string& by) {
  if (!r.stop_kind.empty() || !current(r)) return;
  begin_stop(r, "preempt", "preempted " + by);
}

std::string Lifecycle::launch(const AttemptLaunch& l, AttemptLaunchResult& res) {
  try {
    res = backend_.launch_attempt(l);
    return "";
  } catch (const std::exception& e) {
    return e.what();  // the whole attempt could not be launched: a gang failure (apply_launch)
  }
}

// A new attempt with its GPUs, node token and folder; launched now (local) or from the tick (batch).
bool Lifecycle::start_attempt(RunRecord& r) {
  std::vector<std::string> gpus(r.info.num_nodes);
  if (r.info.gpu && queue_.allocates()) {
    gpus = queue_.allocate(r.info.pool_id.empty() ? "default" : r.info.pool_id, r.info.num_nodes,
                           r.info.accelerators_per_node);
    if (gpus.empty()) return false;  // the policy counted GPUs this pool does not have free: next pass
  }
  api::AttemptInfo a;
  a.number = static_cast<int>(r.info.attempts.size()) + 1;
  set_state(r, a, RunState::kPending);
  a.master_port = free_loopback_port();
  a.started_at_ms = now();
  a.mlflow_run_id = services_.attempt_mlflow_run(r.info.run_id, a.number, r.info.experiment_name,
                                                 RunSpec::parse(r.spec_json).mlflow_run_name);
  for (int n = 0; n < r.info.num_nodes; ++n) a.nodes.push_back(api::NodeInfo{.rank = n, .gpus = gpus[n]});
  r.info.attempts.push_back(a);
  r.info.current_attempt = a.number;
  r.stop_kind.clear();
  r.stop_reason.clear();
  r.stop_started_ms = 0;
  r.agent_pids.assign(r.info.num_nodes, 0);
  queue_.leave(r);
  r.info.status_message = a.number == 1 ? "starting nodes" : fmt::format("starting attempt {}", a.number);

  std::string token = auth_.add_node_token(r.info.run_id, a.number);
  std::string attempt_dir = fmt::format("{}/runs/{}/attempt_{}", opts_.home, r.info.run_id, a.number);
  std::filesystem::create_directories(attempt_dir);
  save(r);
  AttemptLaunch l{r.info.run_id, r.info.experiment_name, a.number, r.info.num_nodes, url_, token, opts_.bin_dir,
                  attempt_dir, gpus, r.info.accelerator_type, r.info.accelerators_per_node, r.info.gpu,
                  r.info.timeout_minutes};
  l.pool = r.info.pool_id;
  // Whose account the commands run as (a root workspace), and whether a node without a sandbox must refuse.
  if (opts_.isolation.per_owner_accounts) l.run_as = owner_unix_account_name(r.info.user);
  l.sandbox_checked = opts_.isolation.probed && opts_.isolation.sandbox;
  l.require_sandbox = needs_separation(opts_.isolation, r.info.user, identity_.bootstrap_admin(), identity_.users().size());
  l.priority_class = r.info.priority_class;
  {  // The volumes the nodes will mount: Slurm makes their folders reachable by the owner's job (issue 40).
    api::NodeSpec v;
    volume_access_.node_volumes(r.info.user, RunSpec::parse(r.spec_json).named_volume_paths(), v);
    l.volumes_root = volumes_.root(), l.volumes = v.volumes, l.read_only_volumes = v.read_only_volumes;
  }
  for (int n = 0; n < r.info.num_nodes; ++n) runtime_[{r.info.run_id, a.number, n}].last_seen_ms = now();
  if (backend_.batch()) {
    // A batch client may take seconds, or hang with its controller: submitted from the tick, unlocked.
    launches_.push_back(std::move(l));
    r.info.status_message = "submitting the attempt to the batch system";
  } else {
    AttemptLaunchResult res;
    std::string error = launch(l, res);
    apply_launch(r, res, error);
  }
  save(r);
  return true;
}

api::CancelReply Lifecycle::cancel(const std::string& id) {
  std::lock_guard<std::mutex> g(runs_.mu());
  RunRecord& r = runs_.find(id);
  if (over(r)) return {id, to_string(r.state), true};
  if (Queue::waiting(r)) {
    set_state(r, RunState::kCanceled);
    r.info.status_message = r.info.current_attempt ? "canceled while queued for its next attempt"
                                                   : "canceled before it started";
    r.stop_kind.clear();
    r.info.ended_at_ms = now();
    save(r);
    logs_.wake();
    return {id, to_string(r.state), false};
  }
  if (r.stop_kind != "cancel") begin_stop(r, "cancel", "canceled by request");
  return {id, to_string(r.state), false};
}

api::NodeSpec Lifecycle::node_spec(const std::string& id, int attempt, int node) const {
  std::lock_guard<std::mutex> g(runs_.mu());
  const RunRecord& r = runs_.find(id);
  check_node(r, attempt, node);
  RunSpec spec = RunSpec::parse(r.spec_json);
  api::NodeSpec s = spec.node;  // the run's fields, typed; this attempt's and node's below
  s.run_id = id;
  s.attempt = attempt;
  s.node_rank = node;
  s.num_nodes = r.info.num_nodes;
  s.master_addr = "127.0.0.1";
  for (const auto& a : r.info.attempts)
    if (a.number == attempt) {
      s.master_port = a.master_port;
      s.mlflow_run_id = a.mlflow_run_id;
    }
  s.snapshot_digest = r.info.snapshot_digest;
  s.max_log_bytes = 64ull << 30;
  s.max_unpack_bytes = opts_.max_unpack_bytes;
  s.max_unpack_entries = opts_.max_unpack_entries;
  s.volumes_root = volumes_.root();
  volume_access_.node_volumes(r.info.user, spec.named_volume_paths(), s);
  return s;
}

api::NodeStatusReply Lifecycle::node_status(const std::string& id, int attempt, int node,
                                            const api::NodeStatusReport& rep) {
  if (rep.state == NodeState::kPending || rep.state == NodeState::kLost)  // the workspace's verdicts, not an agent's
    throw HttpError(400, "INVALID_ARGUMENT", "a node cannot report the state '" + to_string(rep.state) + "'");
  std::lock_guard<std::mutex> g(runs_.mu());
  RunRecord& r = runs_.find(id);
  check_node(r, attempt, node);
  api::AttemptInfo* a = current(r);
  // A report for an attempt that is over (or a run that ended) can only be answered with "stop".
  if (!a || a->number != attempt || over(r, *a)) return {"stop"};
  runtime_[{id, attempt, node}].last_seen_ms = now();
  health_.heartbeat(id, attempt, node, rep, now());
  api::NodeInfo& n = a->nodes.at(node);
  if (is_terminal(n.state)) return {"stop"};
  bool changed = n.state != rep.state || (rep.pid && n.pid != rep.pid);
  if (rep.pid) n.pid = rep.pid;
  if (!rep.host.empty()) n.host = rep.host;
  if (rep.state == NodeState::kStarting || rep.state == NodeState::kRunning) {
    n.state = rep.state;
    if (rep.state == NodeState::kRunning && !n.running_at_ms) n.running_at_ms = now();
    if (rep.state == NodeState::kRunning && state_of(r) == RunState::kPending) {
      set_state(r, RunState::kRunning);
      if (!r.info.started_at_ms) r.info.started_at_ms = now();
      changed = true;
    }
    if (rep.state == NodeState::kRunning && state_of(r, *a) == RunState::kPending) set_state(r, *a, RunState::kRunning);
    if (changed) {
      bool all_running = true;
      for (const auto& x : a->nodes) all_running = all_running && x.state == NodeState::kRunning;
      if (all_running && r.stop_kind.empty()) r.info.status_message = "all nodes running";
      store_.save_run_node(r, attempt, node);  // this node's row and the run's head, not every node's
      logs_.wake();
    }
  } else {
    n.state = rep.state;
    n.exit_code = rep.exit_code;
    n.message = rep.message;
    if (rep.state == NodeState::kFailed) {
      std::string why = rep.message.empty()
                            ? fmt::format("node {} failed with exit code {}", node, rep.exit_code.value_or(-1))
                            : fmt::format("node {} failed: {}", node, rep.message);
      if (rep.exit_code && rep.message.empty()) why = fmt::format("node {} exited with code {}", node, *rep.exit_code);
      node_failed(r, node, rep.exit_code, why, rep.last_lines);
    }
    maybe_finish_attempt(r);
    // An attempt that ended (or a stop that began) may have changed every node: write them all.
    if (over(r, *a) || !r.stop_kind.empty()) save(r);
    else store_.save_run_node(r, attempt, node);
    logs_.wake();
  }
  return {r.stop_kind.empty() ? "continue" : "stop"};
}

void Lifecycle::node_failed(RunRecord& r, int rank, std::optional<int> exit_code, const std::string& why,
                            const std::vector<std::string>& lines) {
  api::AttemptInfo* a = current(r);
  if (!a) return;
  api::NodeInfo& n = a->nodes.at(rank);
  if (!is_terminal(n.state)) {
    n.state = NodeState::kFailed;
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

void Lifecycle::begin_stop(RunRecord& r, const std::string& kind, const std::string& reason) {
  r.stop_kind = kind;
  r.stop_reason = reason;
  r.stop_started_ms = now();
  r.info.status_message = kind == "cancel" ? "canceling: stopping every node"
                          : kind == "timeout" || kind == "preempt" ? reason + "; stopping every node"
                                              : reason + "; stopping the other nodes";
  // A batch job none of whose agents has started (still queued) cannot hear "stop": remove it now.
  if (api::AttemptInfo* a = current(r); a && !a->job_id.empty()) {
    bool none_started = true;
    for (const auto& n : a->nodes) none_started = none_started && n.state == NodeState::kPending;
    if (none_started) job_cancels_.push_back({a->job_id, 0});
  }
  maybe_finish_attempt(r);
  save(r);
  logs_.wake();
}

void Lifecycle::maybe_finish_attempt(RunRecord& r) {
  api::AttemptInfo* a = current(r);
  if (!a || over(r, *a)) return;
  for (const auto& n : a->nodes)
    if (!is_terminal(n.state)) return;
  finish_attempt(r);
}

// An attempt's end, in three steps: give back what it held, name how it ended, and decide what the run
// does next (end, or wait in the queue again). Then the queue moves at once.
void Lifecycle::finish_attempt(RunRecord& r) {
  api::AttemptInfo* a = current(r);
  a->ended_at_ms = now();
  health_.forget(r.info, a->number);
  release_attempt(r, *a);
  RunState end = attempt_end(r, *a);
  queue_.attempt_ended(r, *a, end);  // its usage record (GPU-seconds, wall time): docs/scheduler.md "Usage"
  services_.end_mlflow_run(a->mlflow_run_id, end);
  settle_run(r, *a, end);
  save(r);
  schedule();  // its GPUs are free (and it may be queued again): the queue moves now, not on the next tick
  logs_.wake();
}

// THE ATTEMPT-END POINT: every attempt that ends passes here once (finish_attempt), whatever ended it.
// Agents get the grace to exit, its GPUs go back to the queue, the batch job is removed, the attempt's token
// is revoked. What is recorded when an attempt's GPUs come back (usage) belongs here.
void Lifecycle::release_attempt(RunRecord& r, const api::AttemptInfo& a) {
  for (int n = 0; n < static_cast<int>(r.agent_pids.size()); ++n)
    if (r.agent_pids[n] > 0) lingering_.push_back({r.agent_pids[n], now() + opts_.stop_grace_ms});
  queue_.release(a);
  // The batch job may still be ending (or hold processes that did not stop): scancel it; a no-op when done.
  if (!a.job_id.empty()) job_cancels_.push_back({a.job_id, 0});
  auth_.revoke_node_token(r.info.run_id, a.number);
}

RunState Lifecycle::attempt_end(const RunRecord& r, const api::AttemptInfo& a) const {
  bool all_ok = true;
  for (const auto& n : a.nodes) all_ok = all_ok && n.state == NodeState::kSucceeded;
  const std::string& kind = r.stop_kind;
  return kind.empty() && all_ok ? RunState::kSucceeded
         : kind == "cancel"     ? RunState::kCanceled
         : kind == "timeout"    ? RunState::kTimedOut
         : kind == "preempt"    ? RunState::kPreempted
                                : RunState::kFailed;
}

void Lifecycle::settle_run(RunRecord& r, api::AttemptInfo& a, RunState end) {
  set_state(r, a, end);
  restarted_runs_.erase(r.info.run_id);
  auto end_run = [&](const std::string& message) {
    set_state(r, end);
    r.info.status_message = message;
    r.info.ended_at_ms = now();
    r.stop_kind.clear();
  };
  if (end == RunState::kSucceeded) {
    end_run(fmt::format("all {} node(s) succeeded", a.nodes.size()));
  } else if (end == RunState::kCanceled) {
    a.reason = a.reason.empty() ? "canceled" : a.reason;
    end_run("canceled by request");
  } else if (end == RunState::kTimedOut) {
    a.reason = r.stop_reason;
    end_run(r.stop_reason);
  } else if (end == RunState::kPreempted) {
    // Not the run's end and not a failure: no retry is spent; the run waits again with its place.
    a.reason = r.stop_reason;
    set_state(r, RunState::kPending);
    queue_.requeue(r, fmt::format("attempt {} {}", a.number, r.stop_reason));
  } else {
    if (a.reason.empty()) a.reason = r.stop_reason;
    int failures = 0;  // preempted attempts were not failures: they spend no retry
    for (const auto& x : r.info.attempts) failures += state_of(r, x) == RunState::kPreempted ? 0 : 1;
    if (r.info.max_retries < 0 || failures <= r.info.max_retries)
      queue_.requeue(r, fmt::format("attempt {} failed ({}); retrying", a.number, a.reason));
    else
      end_run(a.reason + (a.number > 1 ? fmt::format(" (after {} attempts)", a.number) : ""));
  }
}

void Lifecycle::tick() {
  run_launches();
  poll_jobs();
  run_job_cancels();
  std::lock_guard<std::mutex> g(runs_.mu());
  for (RunRecord* r : runs_.prune_active()) tick_run(*r);  // the ended leave the index here, and only here
  schedule();
  // Agents of ended attempts normally exit on their own; whatever is left after the grace is killed, so
  // a run never leaves a process behind.
  int64_t t = now();
  std::vector<Lingering> keep;
  for (const auto& l : lingering_) {
    if (!backend_.agent_alive(l.agent_pid)) continue;
    if (t >= l.deadline_ms) backend_.kill_node(l.agent_pid);
    else keep.push_back(l);
  }
  lingering_ = std::move(keep);
}

void Lifecycle::tick_run(RunRecord& r) {
  api::AttemptInfo* a = current(r);
  if (!a || Queue::waiting(r)) return;  // queued: schedule() starts it
  if (over(r, *a)) return;
  int64_t t = now();
  if (!r.stop_kind.empty()) {
    if (t - r.stop_started_ms < opts_.stop_grace_ms) {
      // Nodes that will never answer (their agent is gone) need not hold the stop up.
      for (auto& n : a->nodes)
        if (!is_terminal(n.state) && n.rank < static_cast<int>(r.agent_pids.size()) &&
            r.agent_pids[n.rank] > 0 && !backend_.agent_alive(r.agent_pids[n.rank])) {
          n.state = NodeState::kLost;
          n.message = "agent exited while being stopped";
        }
      maybe_finish_attempt(r);
      return;
    }
    for (auto& n : a->nodes)
      if (!is_terminal(n.state)) {
        if (n.rank < static_cast<int>(r.agent_pids.size())) backend_.kill_node(r.agent_pids[n.rank]);
        n.state = NodeState::kLost;
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
    if (is_terminal(n.state)) continue;
    int pid = n.rank < static_cast<int>(r.agent_pids.size()) ? r.agent_pids[n.rank] : 0;
    auto& rt = runtime_[{r.info.run_id, a->number, n.rank}];
    if (pid > 0 && !backend_.agent_alive(pid)) {
      n.state = NodeState::kLost;
      node_failed(r, n.rank, std::nullopt,
                  fmt::format("the agent of node {} exited without reporting an end (see its agent log)", n.rank), {});
    } else if (t - rt.last_seen_ms > opts_.heartbeat_timeout_ms) {
      n.state = NodeState::kLost;
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
bool Lifecycle::check_stall(RunRecord& r, api::AttemptInfo& a, int64_t t) {
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
