// The attempt lifecycle's batch-backend half (Slurm): the queue state of each active attempt's job, polled
// without the run lock (client commands may take seconds or hang), then applied under it:
// queued -> PENDING with Slurm's reason; a job Slurm ended before its agents reported -> the attempt ends
// with Slurm's reason (time limit -> TIMED_OUT, scancel -> CANCELED, anything else -> a gang failure,
// retried per max_retries). Cancellations (scancel) also run outside the lock, retried until they succeed.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "core/wire/run_state.h"
#include "server/backends/slurm.h"
#include "server/workspace/lifecycle.h"
#include "server/workspace/errors.h"

namespace air::server {

void Lifecycle::apply_launch(RunRecord& r, const AttemptLaunchResult& res, const std::string& error) {
  if (!error.empty()) {
    // The whole attempt could not be launched (e.g. sbatch failed): a gang failure of every node.
    for (int n = 0; n < r.info.num_nodes; ++n)
      node_failed(r, n, std::nullopt, "could not launch the attempt: " + error, {});
    return;
  }
  for (int n = 0; n < r.info.num_nodes && n < static_cast<int>(res.agent_pids.size()); ++n)
    r.agent_pids[n] = res.agent_pids[n];
  current(r)->job_id = res.job_id;
  if (!res.message.empty()) r.info.status_message = res.message;
  for (const auto& [n, why] : res.node_errors) node_failed(r, n, std::nullopt, "could not start the node agent: " + why, {});
}

void Lifecycle::run_launches() {
  std::vector<AttemptLaunch> todo;
  {
    std::lock_guard<std::mutex> g(runs_.mu());
    todo.swap(launches_);
  }
  for (const auto& l : todo) {
    AttemptLaunchResult res;
    std::string error = launch(l, res);
    std::lock_guard<std::mutex> g(runs_.mu());
    RunRecord* run = runs_.get(l.run_id);
    api::AttemptInfo* a = run == nullptr ? nullptr : current(*run);
    bool live = a && a->number == l.attempt && !over(*run, *a);
    if (!res.job_id.empty() && (!live || !run->stop_kind.empty())) {
      // Canceled (or timed out) while being submitted: the job must not run.
      job_cancels_.push_back({res.job_id, 0});
    }
    if (!live) continue;
    RunRecord& r = *run;
    if (!r.stop_kind.empty()) {
      a->job_id = res.job_id;
      for (auto& n : a->nodes)
        if (!is_terminal(n.state)) {
          n.state = NodeState::kLost;
          n.message = "stopped before its job started";
        }
      maybe_finish_attempt(r);
    } else {
      apply_launch(r, res, error);
      // The submission took time the agents could not use: their heartbeat windows start now.
      for (int n = 0; n < r.info.num_nodes; ++n) runtime_[{r.info.run_id, l.attempt, n}].last_seen_ms = now();
    }
    save(r);
    logs_.wake();
  }
}

void Lifecycle::poll_jobs() {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> g(runs_.mu());
    int64_t t = now();
    if (t - last_job_poll_ms_ < opts_.job_poll_ms) return;
    last_job_poll_ms_ = t;
    for (RunRecord* r : runs_.active()) {
      api::AttemptInfo* a = current(*r);
      if (a && !a->job_id.empty() && !over(*r, *a)) ids.push_back(a->job_id);
    }
  }
  if (ids.empty()) return;
  std::map<std::string, JobState> states;
  std::string error;
  try {
    states = backend_.job_states(ids);
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::lock_guard<std::mutex> g(runs_.mu());
  if (!error.empty() && error != last_job_poll_error_)
    std::fprintf(stderr, "air server: %s (job states are unknown until it answers)\n", error.c_str());
  last_job_poll_error_ = error;
  for (const std::string& id : runs_.active_ids()) {  // still holds every run polled above: only tick() prunes it
    RunRecord& r = runs_.find(id);
    api::AttemptInfo* a = current(r);
    if (!a || a->job_id.empty() || over(r, *a)) continue;
    if (std::find(ids.begin(), ids.end(), a->job_id) == ids.end()) continue;  // launched after the poll
    if (!error.empty()) {
      // Unknown is not lost: agents that run keep heartbeating; those not started yet are not blamed.
      for (const auto& n : a->nodes)
        if (n.state == NodeState::kPending) runtime_[{id, a->number, n.rank}].last_seen_ms = now();
      if (r.stop_kind.empty()) r.info.status_message = error;
      continue;
    }
    auto it = states.find(a->job_id);
    apply_job_state(r, it == states.end() ? nullptr : &it->second);
  }
}

void Lifecycle::apply_job_state(RunRecord& r, const JobState* s) {
  api::AttemptInfo* a = current(r);
  if (s && s->phase == JobState::Phase::kQueued) {
    for (const auto& n : a->nodes)
      if (n.state == NodeState::kPending) runtime_[{r.info.run_id, a->number, n.rank}].last_seen_ms = now();
    std::string msg = fmt::format("pending in the Slurm queue as job {}{}", a->job_id,
                                  s->reason.empty() ? "" : " (reason: " + s->reason + ")");
    if (r.stop_kind.empty() && r.info.status_message != msg) {
      r.info.status_message = msg;
      save(r);
      logs_.wake();
    }
    return;
  }
  if (s && s->phase == JobState::Phase::kRunning) {
    bool none_started = true;
    for (const auto& n : a->nodes) none_started = none_started && n.state == NodeState::kPending;
    std::string msg = fmt::format("Slurm job {} running on {}; waiting for the node agents", a->job_id, s->nodes);
    if (none_started && r.stop_kind.empty() && r.info.status_message != msg) {
      r.info.status_message = msg;
      save(r);
    }
    return;
  }
  end_for_job(r, s);
}

// The job is over (or unknown to Slurm) while some node has not reported an end: its agent is gone.
void Lifecycle::end_for_job(RunRecord& r, const JobState* s) {
  api::AttemptInfo* a = current(r);
  std::string what = s ? describe_slurm_end(*s)
                       : std::string("the job is no longer known to Slurm");
  std::string reason = fmt::format("Slurm ended job {}: {}", a->job_id, what);
  auto lose_rest = [&] {
    for (auto& n : a->nodes)
      if (!is_terminal(n.state)) {
        n.state = NodeState::kLost;
        n.message = reason;
      }
  };
  bool stopping = !r.stop_kind.empty();
  int first = -1;
  for (const auto& n : a->nodes)
    if (!is_terminal(n.state) && first < 0) first = n.rank;
  if (first < 0) return;  // every node already reported; the attempt ends through them
  if (stopping) {
    lose_rest();
  } else if (s && s->state == "TIMEOUT") {
    r.stop_kind = "timeout";
    r.stop_reason = reason;
    lose_rest();
  } else if (s && s->state == "CANCELLED") {
    r.stop_kind = "cancel";
    r.stop_reason = reason;
    a->reason = reason;
    lose_rest();
  } else {
    node_failed(r, first, std::nullopt, fmt::format("node {} lost: {}", first, reason), {});
    lose_rest();
  }
  std::string kind = r.stop_kind;
  maybe_finish_attempt(r);
  if (kind == "cancel" && !stopping && state_of(r) == RunState::kCanceled) r.info.status_message = reason;
  save(r);
  logs_.wake();
}

void Lifecycle::run_job_cancels() {
  std::vector<JobCancel> due;
  {
    std::lock_guard<std::mutex> g(runs_.mu());
    int64_t t = now();
    std::vector<JobCancel> later;
    for (auto& c : job_cancels_) (c.next_try_ms <= t ? due : later).push_back(c);
    job_cancels_ = std::move(later);
  }
  std::vector<JobCancel> failed;
  for (auto& c : due) {
    try {
      backend_.cancel_job(c.job_id);
    } catch (const std::exception& e) {
      // Never dropped: a job left in the queue would hold nodes. Retried every 5 s until Slurm answers.
      std::fprintf(stderr, "air server: %s; retrying in 5 s\n", e.what());
      failed.push_back({c.job_id, now() + 5000});
    }
  }
  if (failed.empty()) return;
  std::lock_guard<std::mutex> g(runs_.mu());
  job_cancels_.insert(job_cancels_.end(), failed.begin(), failed.end());
}

}  // namespace air::server
