// The queue half of Workspace: each pass hands every waiting and running run to the scheduling policy
// (server/scheduler/policy.h) and applies what it decides: preempt, start attempts, and tell each waiting
// run where it stands. The local backend's GPU indices are handed out here, pool by pool.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/host.h"
#include "core/sandbox/sandbox.h"
#include "core/wire/run_state.h"
#include "server/workspace/services.h"
#include "server/workspace/workspace.h"

namespace air::server {

namespace {

std::vector<int> gpu_list(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (!s.empty() && pos <= s.size()) {
    auto comma = s.find(',', pos);
    out.push_back(std::atoi(s.substr(pos, comma - pos).c_str()));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace

void Workspace::setup_pools() {
  int total = backend_->total_gpus();
  if (total < 0) return;  // a batch system allocates GPUs itself
  if (opts_.pools.empty()) {
    pool_gpus_["default"] = {0, total};
    return;
  }
  int next = 0;
  for (const auto& p : opts_.pools) {
    pool_gpus_[p.name] = {next, p.gpus};
    next += p.gpus;
  }
  if (next > total)
    throw Error(fmt::format("the pools of server.conf take {} GPUs, but this machine has {}", next, total),
                "shrink the pools in [pools] (AIR_LOCAL_GPUS sets the count on a machine without GPUs)");
}

// The pool a new run queues in: its compute.pool_id, else "default" (or the first configured pool).
std::string Workspace::pool_for(const std::string& pool_id, std::vector<std::string>& notices) const {
  if (opts_.pools.empty()) {
    if (!pool_id.empty())
      notices.push_back(fmt::format("compute.pool_id '{}': this workspace has no pools configured, so the run "
                                    "waits in its one pool, 'default'",
                                    pool_id));
    return "default";
  }
  std::string names;
  for (const auto& p : opts_.pools) {
    if (p.name == pool_id || (pool_id.empty() && p.name == "default")) return p.name;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  if (pool_id.empty()) return opts_.pools.front().name;
  throw HttpError(400, "UNKNOWN_POOL",
                  fmt::format("compute.pool_id '{}' is not a pool of this workspace (pools: {})", pool_id, names));
}

// Waiting for its (next) attempt: never started, or queued again after a failed or preempted attempt.
bool Workspace::waiting(const RunRecord& r) const {
  if (over(r.info)) return false;
  return r.info.current_attempt == 0 || r.stop_kind == "retry";
}

sched::Input Workspace::queue_input() const {
  sched::Input in;
  in.now_ms = now();
  for (const auto& [name, range] : pool_gpus_) in.pools.push_back({name, range.second});
  for (const RunRecord* rp : active_runs()) {
    const RunRecord& r = *rp;
    const std::string& id = r.info.run_id;
    int gpus = r.info.gpu ? r.info.num_nodes * r.info.accelerators_per_node : 0;
    auto cls = sched::priority_from_string(r.info.priority_class).value_or(sched::PriorityClass::kNormal);
    int64_t bound = r.info.timeout_minutes ? int64_t(*r.info.timeout_minutes) * opts_.minute_ms : 0;
    std::string pool = r.info.pool_id.empty() ? "default" : r.info.pool_id;
    if (waiting(r)) {
      in.queued.push_back({id, pool, cls, r.info.submitted_at_ms, r.seq, gpus, bound, ""});
      continue;
    }
    for (const auto& a : r.info.attempts)
      if (a.number == r.info.current_attempt && !over(a))
        in.running.push_back({id, pool, cls, gpus, a.started_at_ms, bound, !r.stop_kind.empty(), ""});
  }
  return in;
}

// Re-entrant by deferral: an attempt that ends while a pass starts others (a launch that fails at once
// ends it, and an attempt's end asks for a pass) makes the running pass go round again instead.
void Workspace::schedule() {
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

void Workspace::schedule_pass() {
  if (backend_->total_gpus() < 0) {
    // A batch system queues and allocates (its priorities come from the QOS the class maps to): every
    // waiting run goes to it at once, in submission order.
    std::vector<RunRecord*> rs;
    for (RunRecord* r : active_runs())
      if (waiting(*r)) rs.push_back(r);
    std::sort(rs.begin(), rs.end(), [](auto* a, auto* b) { return a->seq < b->seq; });
    for (RunRecord* r : rs)
      if (waiting(*r)) start_attempt(*r);
    return;
  }
  sched::Options o;
  o.default_runtime_ms = opts_.default_runtime_minutes * opts_.minute_ms;
  o.stop_grace_ms = opts_.stop_grace_ms;
  o.preemption = opts_.preemption;
  sched::Decisions d = sched::decide(queue_input(), o);
  for (const auto& p : d.preemptions) preempt(runs_.find(p.victim), p.for_job);
  for (const auto& s : d.starts)
    if (RunRecord& r = runs_.find(s.id); waiting(r)) start_attempt(r);
  show_waiting(d);
}

// Kept in memory and on the wire, not written each pass: the estimate changes by the minute, and a
// restarted workspace recomputes it on its first pass.
void Workspace::show_waiting(const sched::Decisions& d) {
  bool changed = false;
  for (const auto& w : d.waiting) {
    if (!waiting(runs_.find(w.id))) continue;  // started by a nested pass
    api::RunInfo& i = runs_.find(w.id).info;
    auto note = requeue_note_.find(w.id);
    std::string msg = (note == requeue_note_.end() ? "" : note->second + "; ") + sched::describe(w, now());
    changed = changed || msg != i.status_message || i.queue_position != w.position;
    i.status_message = msg;
    i.queue_position = w.position;
    i.queue_length = w.queue_length;
    i.gpus_reserved = w.reserved_held;
    i.estimated_start_ms = w.estimated_start_ms;
  }
  if (changed) logs_.wake();
}

void Workspace::preempt(RunRecord& r, const std::string& by) {
  if (!r.stop_kind.empty() || !current(r)) return;
  begin_stop(r, "preempt", fmt::format("preempted by CRITICAL run {}", by));
}

// The run waits for its next attempt with its place in the queue (its submit time is unchanged).
void Workspace::requeue(RunRecord& r, const std::string& why) {
  r.stop_kind = "retry";
  r.stop_reason.clear();
  requeue_note_[r.info.run_id] = why;
  r.info.status_message = why + "; queued again";
}

std::vector<std::string> Workspace::allocate_gpus(const std::string& pool, int nodes, int per_node) {
  auto range = pool_gpus_.find(pool);
  if (range == pool_gpus_.end()) return {};
  std::vector<int> free;
  for (int g = range->second.first; g < range->second.first + range->second.second; ++g)
    if (!gpus_in_use_.count(g)) free.push_back(g);
  if (static_cast<int>(free.size()) < nodes * per_node) return {};
  std::vector<std::string> out;
  for (int n = 0; n < nodes; ++n) {
    std::string s;
    for (int k = 0; k < per_node; ++k) {
      int g = free[n * per_node + k];
      gpus_in_use_.insert(g);
      s += (k ? "," : "") + std::to_string(g);
    }
    out.push_back(s);
  }
  return out;
}

void Workspace::claim_gpus(const api::AttemptInfo& a) {
  for (const auto& n : a.nodes)
    for (int g : gpu_list(n.gpus)) gpus_in_use_.insert(g);
}

void Workspace::release_gpus(RunRecord& r) {
  if (auto* a = current(r))
    for (const auto& n : a->nodes)
      for (int g : gpu_list(n.gpus)) gpus_in_use_.erase(g);
}

std::string Workspace::launch(const AttemptLaunch& l, AttemptLaunchResult& res) {
  try {
    res = backend_->launch_attempt(l);
    return "";
  } catch (const std::exception& e) {
    return e.what();  // the whole attempt could not be launched: a gang failure (apply_launch)
  }
}

// A new attempt with its GPUs, node token and folder; launched now (local) or from the tick (batch).
bool Workspace::start_attempt(RunRecord& r) {
  std::vector<std::string> gpus(r.info.num_nodes);
  if (r.info.gpu && backend_->total_gpus() >= 0) {
    gpus = allocate_gpus(r.info.pool_id.empty() ? "default" : r.info.pool_id, r.info.num_nodes,
                         r.info.accelerators_per_node);
    if (gpus.empty()) return false;  // the policy counted GPUs this pool does not have free: next pass
  }
  api::AttemptInfo a;
  a.number = static_cast<int>(r.info.attempts.size()) + 1;
  a.state = "PENDING";
  a.master_port = free_loopback_port();
  a.started_at_ms = now();
  a.mlflow_run_id = services_->attempt_mlflow_run(r.info.run_id, a.number, r.info.experiment_name,
                                                  RunSpec::parse(r.spec_json).mlflow_run_name);
  for (int n = 0; n < r.info.num_nodes; ++n) a.nodes.push_back(api::NodeInfo{.rank = n, .gpus = gpus[n]});
  r.info.attempts.push_back(a);
  r.info.current_attempt = a.number;
  r.stop_kind.clear();
  r.stop_reason.clear();
  r.stop_started_ms = 0;
  r.agent_pids.assign(r.info.num_nodes, 0);
  r.info.queue_position = r.info.queue_length = r.info.gpus_reserved = 0;
  r.info.estimated_start_ms.reset();
  requeue_note_.erase(r.info.run_id);
  r.info.status_message = a.number == 1 ? "starting nodes" : fmt::format("starting attempt {}", a.number);

  std::string token = auth_->add_node_token(r.info.run_id, a.number);
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
  l.require_sandbox = needs_separation(opts_.isolation, r.info.user, identity_->bootstrap_admin(), identity_->users().size());
  l.priority_class = r.info.priority_class;
  {  // The volumes the nodes will mount: Slurm makes their folders reachable by the owner's job (issue 40).
    api::NodeSpec v;
    volume_access_->node_volumes(r.info.user, RunSpec::parse(r.spec_json).named_volume_paths(), v);
    l.volumes_root = volumes_.root(), l.volumes = v.volumes, l.read_only_volumes = v.read_only_volumes;
  }
  for (int n = 0; n < r.info.num_nodes; ++n) runtime_[{r.info.run_id, a.number, n}].last_seen_ms = now();
  if (backend_->batch()) {
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

}  // namespace air::server
