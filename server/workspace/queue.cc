// The queue (queue.h): pools and GPUs, the policy's input and call, and each waiting run's place.
#include "server/workspace/queue.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "core/base/error.h"
#include "server/workspace/errors.h"
#include "server/workspace/fairness.h"

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

Queue::Queue(const WorkspaceOptions& opts, int total_gpus, const RunTable& runs, std::function<int64_t()> now)
    : opts_(opts), total_gpus_(total_gpus), runs_(runs), now_(std::move(now)) {
  if (total_gpus_ < 0) return;  // a batch system allocates GPUs itself
  if (opts_.pools.empty()) {
    pool_gpus_["default"] = {0, total_gpus_};
    return;
  }
  int next = 0;
  for (const auto& p : opts_.pools) {
    pool_gpus_[p.name] = {next, p.gpus};
    next += p.gpus;
  }
  if (next > total_gpus_)
    throw Error(fmt::format("the pools of server.conf take {} GPUs, but this machine has {}", next, total_gpus_),
                "shrink the pools in [pools] (AIR_LOCAL_GPUS sets the count on a machine without GPUs)");
}

std::string Queue::pool_for(const std::string& pool_id, std::vector<std::string>& notices) const {
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

std::optional<int> Queue::pool_gpus(const std::string& pool) const {
  auto it = pool_gpus_.find(pool);
  if (it == pool_gpus_.end()) return std::nullopt;
  return it->second.second;
}

bool Queue::waiting(const RunRecord& r) {
  if (over(r)) return false;
  return r.info.current_attempt == 0 || r.stop_kind == "retry";
}

sched::Input Queue::input() const {
  sched::Input in;
  in.now_ms = now_();
  for (const auto& [name, range] : pool_gpus_) in.pools.push_back({name, range.second});
  for (const RunRecord* rp : runs_.active()) {
    const RunRecord& r = *rp;
    const std::string& id = r.info.run_id;
    int gpus = r.info.gpu ? r.info.num_nodes * r.info.accelerators_per_node : 0;
    auto cls = sched::priority_from_string(r.info.priority_class).value_or(sched::PriorityClass::kNormal);
    int64_t bound = r.info.timeout_minutes ? int64_t(*r.info.timeout_minutes) * opts_.minute_ms : 0;
    std::string pool = r.info.pool_id.empty() ? "default" : r.info.pool_id;
    if (waiting(r)) {
      in.queued.push_back({id, pool, cls, r.info.submitted_at_ms, r.seq, gpus, bound, r.info.user, "", 0});
      continue;
    }
    for (const auto& a : r.info.attempts)
      if (a.number == r.info.current_attempt && !over(r, a))
        in.running.push_back({id, pool, cls, gpus, a.started_at_ms, bound, !r.stop_kind.empty(), r.info.user, "", 0});
  }
  if (fair_) fair_->feed(in, runs_);  // groups, usage, shares, quotas, runtimes from history
  return in;
}

sched::Decisions Queue::decide() const {
  if (total_gpus_ < 0) {
    // A batch system queues and allocates (its priorities come from the QOS the class maps to): every
    // waiting run goes to it at once, in submission order.
    std::vector<const RunRecord*> rs;
    for (const RunRecord* r : runs_.active())
      if (waiting(*r)) rs.push_back(r);
    std::sort(rs.begin(), rs.end(), [](auto* a, auto* b) { return a->seq < b->seq; });
    sched::Decisions d;
    for (const RunRecord* r : rs) d.starts.push_back({r->info.run_id, false});
    return d;
  }
  sched::Options o;
  o.default_runtime_ms = opts_.default_runtime_minutes * opts_.minute_ms;
  o.stop_grace_ms = opts_.stop_grace_ms;
  o.preemption = opts_.preemption;
  if (fair_) fair_->options(o);
  return sched::decide(input(), o);
}

bool Queue::show_waiting(const sched::Decisions& d, RunTable& runs) {
  bool changed = false;
  for (const auto& w : d.waiting) {
    RunRecord& r = runs.find(w.id);
    if (!waiting(r)) continue;  // started by a nested pass
    api::RunInfo& i = r.info;
    auto note = requeue_note_.find(w.id);
    std::string msg = (note == requeue_note_.end() ? "" : note->second + "; ") + sched::describe(w, now_());
    changed = changed || msg != i.status_message || i.queue_position != w.position;
    i.status_message = msg;
    i.queue_position = w.position;
    i.queue_length = w.queue_length;
    i.gpus_reserved = w.reserved_held;
    i.estimated_start_ms = w.estimated_start_ms;
  }
  return changed;
}

void Queue::requeue(RunRecord& r, const std::string& why) {
  r.stop_kind = "retry";
  r.stop_reason.clear();
  requeue_note_[r.info.run_id] = why;
  r.info.status_message = why + "; queued again";
}

void Queue::attempt_ended(const RunRecord& r, const api::AttemptInfo& a, RunState end) {
  if (fair_) fair_->record(r, a, end);
}

std::string Queue::quota_refusal(const std::string& user, const std::string& pool, int gpus) const {
  return fair_ ? fair_->refusal(user, pool, gpus, runs_) : "";
}

void Queue::leave(RunRecord& r) {
  r.info.queue_position = r.info.queue_length = r.info.gpus_reserved = 0;
  r.info.estimated_start_ms.reset();
  requeue_note_.erase(r.info.run_id);
}

std::vector<std::string> Queue::allocate(const std::string& pool, int nodes, int per_node) {
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

void Queue::claim(const api::AttemptInfo& a) {
  for (const auto& n : a.nodes)
    for (int g : gpu_list(n.gpus)) gpus_in_use_.insert(g);
}

void Queue::release(const api::AttemptInfo& a) {
  for (const auto& n : a.nodes)
    for (int g : gpu_list(n.gpus)) gpus_in_use_.erase(g);
}

}  // namespace air::server
