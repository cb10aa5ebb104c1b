// Fair share's part of the workspace (fairness.h): groups, usage, quotas and history for the policy.
#include "server/workspace/fairness.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/base/error.h"
#include "server/scheduler/estimate.h"
#include "server/store/identity.h"
#include "server/workspace/errors.h"
#include "server/workspace/queue.h"
#include "server/workspace/run_spec.h"
#include "server/workspace/run_table.h"

namespace air::server {

namespace {

constexpr size_t kWorkloadHistory = 20, kOwnerHistory = 50;  // recent runtimes kept per key

std::vector<int64_t> as_vector(const std::map<std::string, std::deque<int64_t>>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? std::vector<int64_t>{} : std::vector<int64_t>(it->second.begin(), it->second.end());
}

void keep(std::deque<int64_t>& d, int64_t v, size_t n) {
  d.push_back(v);
  while (d.size() > n) d.pop_front();
}

}  // namespace

Fairness::Fairness(const std::string& db_path, sched::FairConfig conf, const IdentityStore& ids,
                   std::function<int64_t()> now, std::vector<std::string> pools)
    : conf_(std::move(conf)), pools_(std::move(pools)), ids_(ids), now_(std::move(now)), store_(db_path),
      users_(conf_.half_life_ms), groups_(conf_.half_life_ms) {
  for (const sched::Quota& q : conf_.quotas)
    if (std::string why = unknown_pool(q.pool); !why.empty())
      throw Error("server.conf: [quotas] " + sched::quota_subject(q) + ": " + why, "name one of the pools, or none for every pool");
  // Records older than 20 half-lives weigh less than a millionth: not read back. Without decay, all are.
  int64_t t = now_();
  int64_t from = conf_.half_life_ms > 0 ? std::max<int64_t>(0, t - 20 * conf_.half_life_ms) : 0;
  std::lock_guard lock(mu_);
  for (const UsageRecord& r : store_.since(from)) learn(r);
  admin_quotas_ = store_.quotas();
}

std::string Fairness::workload_key(const api::RunInfo& i) {
  return i.user + "/" + i.experiment_name + "/" + i.file_name;
}

void Fairness::learn(const UsageRecord& r) {
  users_.add(r.user, double(r.gpu_ms()), r.ended_ms);
  if (!r.group.empty()) groups_.add(r.group, double(r.gpu_ms()), r.ended_ms);
  if (run_state_from_string(r.state) == RunState::kSucceeded && r.wall_ms() > 0) {
    keep(workload_runtimes_[r.workload], r.wall_ms(), kWorkloadHistory);
    keep(owner_runtimes_[r.user], r.wall_ms(), kOwnerHistory);
  }
}

std::string Fairness::group_locked(const std::string& user) const {
  std::vector<std::string> gs;
  for (const std::string& g : ids_.groups_of(user))
    if (g != "users" && g != "admins") gs.push_back(g);
  if (gs.empty()) return "";
  std::sort(gs.begin(), gs.end());
  for (const std::string& g : gs) {
    if (conf_.group_shares.count(g)) return g;
    for (const sched::Quota& q : effective_quotas())
      if (q.kind == sched::Quota::Kind::kGroup && q.name == g) return g;
  }
  return gs.front();
}

std::string Fairness::group_of(const std::string& user) const {
  std::lock_guard lock(mu_);
  return group_locked(user);
}

void Fairness::options(sched::Options& o) const {
  o.fair_share = conf_.enabled;
  o.borrowing = conf_.borrowing;
}

std::vector<sched::Quota> Fairness::effective_quotas() const {
  std::vector<sched::Quota> out;
  auto same = [](const sched::Quota& a, const sched::Quota& b) {
    return a.kind == b.kind && a.name == b.name && a.pool == b.pool;
  };
  for (const sched::Quota& q : conf_.quotas) {
    bool replaced = std::any_of(admin_quotas_.begin(), admin_quotas_.end(), [&](const QuotaEntry& e) { return same(e.quota, q); });
    if (!replaced) out.push_back(q);
  }
  for (const QuotaEntry& e : admin_quotas_) out.push_back(e.quota);
  return out;
}

void Fairness::feed(sched::Input& in, const RunTable& runs) const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> group;  // per owner, once per pass
  auto group_for = [&](const std::string& user) -> const std::string& {
    auto it = group.find(user);
    if (it == group.end()) it = group.emplace(user, group_locked(user)).first;
    return it->second;
  };
  // One estimate per workload per pass (a queue of 10,000 runs is mostly a few workloads); capped per run.
  std::map<std::string, int64_t> usual;
  auto expected = [&](const std::string& id, int64_t bound) {
    const api::RunInfo& i = runs.find(id).info;
    std::string key = workload_key(i);
    auto it = usual.find(key);
    if (it == usual.end())
      it = usual.emplace(key, sched::estimate_runtime(as_vector(workload_runtimes_, key), as_vector(owner_runtimes_, i.user), 0).ms).first;
    return it->second > 0 && bound > 0 ? std::min(it->second, bound) : it->second;
  };
  for (sched::QueuedJob& j : in.queued) {
    j.group = group_for(j.owner);
    j.expected_ms = expected(j.id, j.runtime_bound_ms);
  }
  for (sched::RunningJob& r : in.running) {
    r.group = group_for(r.owner);
    r.expected_ms = expected(r.id, r.runtime_bound_ms);
  }
  in.usage.user_usage = users_.all(in.now_ms);
  in.usage.group_usage = groups_.all(in.now_ms);
  in.usage.user_shares = conf_.user_shares;
  in.usage.group_shares = conf_.group_shares;
  in.quotas = effective_quotas();
}

void Fairness::record(const RunRecord& r, const api::AttemptInfo& a, RunState end) {
  UsageRecord rec;
  rec.run_id = r.info.run_id;
  rec.attempt = a.number;
  rec.user = r.info.user;
  rec.pool = r.info.pool_id.empty() ? "default" : r.info.pool_id;
  rec.priority_class = r.info.priority_class.empty() ? "NORMAL" : r.info.priority_class;
  rec.usage_policy_name = RunSpec::parse(r.spec_json).usage_policy_name;
  rec.workload = workload_key(r.info);
  rec.state = to_string(end);  // the usage table keeps the name
  rec.gpus = r.info.gpu ? r.info.num_nodes * r.info.accelerators_per_node : 0;
  rec.started_ms = a.started_at_ms;
  rec.ended_ms = std::max(a.ended_at_ms, a.started_at_ms);
  std::lock_guard lock(mu_);
  rec.group = group_locked(rec.user);
  if (store_.record(rec)) learn(rec);
}

std::string Fairness::refusal(const std::string& user, const std::string& pool, int gpus, const RunTable& runs) const {
  std::lock_guard lock(mu_);
  std::vector<sched::Quota> quotas = effective_quotas();
  if (quotas.empty()) return "";
  sched::QuotaKey key{user, group_locked(user), pool};
  std::map<std::string, std::string> group;
  auto queued = [&](const sched::Quota& q) {
    int n = 0;
    for (const RunRecord* r : runs.active()) {
      if (!Queue::waiting(*r)) continue;
      auto it = group.find(r->info.user);
      if (it == group.end()) it = group.emplace(r->info.user, group_locked(r->info.user)).first;
      std::string p = r->info.pool_id.empty() ? "default" : r->info.pool_id;
      n += sched::applies(q, {r->info.user, it->second, p}) ? 1 : 0;
    }
    return n;
  };
  return sched::check_submit(quotas, key, gpus, queued);
}

std::vector<QuotaEntry> Fairness::quotas() const {
  std::lock_guard lock(mu_);
  std::vector<QuotaEntry> out;
  for (const sched::Quota& q : effective_quotas()) {
    auto it = std::find_if(admin_quotas_.begin(), admin_quotas_.end(), [&](const QuotaEntry& e) {
      return e.quota.kind == q.kind && e.quota.name == q.name && e.quota.pool == q.pool;
    });
    out.push_back(it != admin_quotas_.end() ? *it : QuotaEntry{q, "server.conf", 0});
  }
  return out;
}

std::string Fairness::unknown_pool(const std::string& pool) const {
  if (pool == sched::kAllPools || pools_.empty() || std::find(pools_.begin(), pools_.end(), pool) != pools_.end()) return "";
  std::string names;
  for (const auto& p : pools_) names += (names.empty() ? "" : ", ") + p;
  return fmt::format("pool '{}' is not a pool of this workspace (pools: {})", pool, names);
}

void Fairness::set_quota(const sched::Quota& q, const std::string& by) {
  if (std::string why = unknown_pool(q.pool); !why.empty()) throw HttpError(400, "INVALID_ARGUMENT", why);
  std::lock_guard lock(mu_);
  store_.set_quota(q, by, now_());
  admin_quotas_ = store_.quotas();
}

bool Fairness::remove_quota(sched::Quota::Kind kind, const std::string& name, const std::string& pool) {
  std::lock_guard lock(mu_);
  bool removed = store_.remove_quota(kind, name, pool);
  admin_quotas_ = store_.quotas();
  return removed;
}

std::vector<UsageRecord> Fairness::usage_since(int64_t since_ms, const std::string& user) const {
  return store_.since(since_ms, user);
}

}  // namespace air::server
