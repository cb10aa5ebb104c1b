// SQLite tables of usage records and admin-set quotas (server/store/usage.h).
#include "server/store/usage.h"

#include <algorithm>
#include <map>
#include <set>

#include "server/store/sqlite.h"

namespace air::server {

UsageStore::UsageStore(const std::string& db_path) : db_(std::make_unique<sql::Db>(db_path)) {
  sql::exec(db_->get(), R"(
    CREATE TABLE IF NOT EXISTS usage_records(
      run_id TEXT NOT NULL, attempt INTEGER NOT NULL, user TEXT NOT NULL, group_name TEXT NOT NULL,
      pool TEXT NOT NULL, priority_class TEXT NOT NULL, usage_policy_name TEXT NOT NULL, workload TEXT NOT NULL,
      state TEXT NOT NULL, gpus INTEGER NOT NULL, started_ms INTEGER NOT NULL, ended_ms INTEGER NOT NULL,
      PRIMARY KEY(run_id, attempt));
    CREATE INDEX IF NOT EXISTS usage_records_ended ON usage_records(ended_ms);
    CREATE TABLE IF NOT EXISTS quotas(
      kind TEXT NOT NULL, name TEXT NOT NULL, pool TEXT NOT NULL, max_gpus INTEGER NOT NULL,
      max_queued INTEGER NOT NULL, set_by TEXT NOT NULL, set_ms INTEGER NOT NULL, PRIMARY KEY(kind, name, pool));
  )");
}

UsageStore::~UsageStore() = default;

bool UsageStore::record(const UsageRecord& r) {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), R"(INSERT OR IGNORE INTO usage_records(run_id, attempt, user, group_name, pool,
      priority_class, usage_policy_name, workload, state, gpus, started_ms, ended_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))");
  st.bind(1, r.run_id).bind(2, int64_t(r.attempt)).bind(3, r.user).bind(4, r.group).bind(5, r.pool);
  st.bind(6, r.priority_class).bind(7, r.usage_policy_name).bind(8, r.workload).bind(9, r.state);
  st.bind(10, int64_t(r.gpus)).bind(11, r.started_ms).bind(12, r.ended_ms).run();
  return sqlite3_changes(db_->get()) > 0;
}

std::vector<UsageRecord> UsageStore::since(int64_t since_ms, const std::string& user) const {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), R"(SELECT run_id, attempt, user, group_name, pool, priority_class, usage_policy_name,
      workload, state, gpus, started_ms, ended_ms FROM usage_records WHERE ended_ms >= ? AND (? = '' OR user = ?)
      ORDER BY ended_ms, run_id, attempt)");
  st.bind(1, since_ms).bind(2, user).bind(3, user);
  std::vector<UsageRecord> out;
  while (st.step()) {
    UsageRecord r;
    r.run_id = st.text(0);
    r.attempt = static_cast<int>(st.i64(1));
    r.user = st.text(2), r.group = st.text(3), r.pool = st.text(4), r.priority_class = st.text(5);
    r.usage_policy_name = st.text(6), r.workload = st.text(7), r.state = st.text(8);
    r.gpus = static_cast<int>(st.i64(9));
    r.started_ms = st.i64(10), r.ended_ms = st.i64(11);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<UsageTotal> UsageStore::totals(const std::vector<UsageRecord>& records, const std::string& by) {
  std::map<std::string, UsageTotal> sums;
  std::map<std::string, std::set<std::string>> runs;
  for (const UsageRecord& r : records) {
    const std::string& k = by == "group" ? r.group : by == "pool" ? r.pool : by == "class" ? r.priority_class
                           : by == "policy" ? r.usage_policy_name : r.user;
    UsageTotal& t = sums[k];
    t.key = k;
    t.gpu_ms += r.gpu_ms();
    t.wall_ms += r.wall_ms();
    ++t.attempts;
    runs[k].insert(r.run_id);
  }
  std::vector<UsageTotal> out;
  for (auto& [k, t] : sums) {
    t.runs = static_cast<int>(runs[k].size());
    out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(), [](const UsageTotal& a, const UsageTotal& b) { return a.gpu_ms > b.gpu_ms; });
  return out;
}

std::vector<QuotaEntry> UsageStore::quotas() const {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT kind, name, pool, max_gpus, max_queued, set_by, set_ms FROM quotas ORDER BY kind, name, pool");
  std::vector<QuotaEntry> out;
  while (st.step()) {
    QuotaEntry e;
    e.quota.kind = st.text(0) == "group" ? sched::Quota::Kind::kGroup : sched::Quota::Kind::kUser;
    e.quota.name = st.text(1);
    e.quota.pool = st.text(2);
    e.quota.max_gpus = static_cast<int>(st.i64(3));
    e.quota.max_queued = static_cast<int>(st.i64(4));
    e.set_by = st.text(5);
    e.set_ms = st.i64(6);
    out.push_back(std::move(e));
  }
  return out;
}

void UsageStore::set_quota(const sched::Quota& q, const std::string& set_by, int64_t now_ms) {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), R"(INSERT OR REPLACE INTO quotas(kind, name, pool, max_gpus, max_queued, set_by, set_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?))");
  st.bind(1, sched::to_string(q.kind)).bind(2, q.name).bind(3, q.pool).bind(4, int64_t(q.max_gpus));
  st.bind(5, int64_t(q.max_queued)).bind(6, set_by).bind(7, now_ms).run();
}

bool UsageStore::remove_quota(sched::Quota::Kind kind, const std::string& name, const std::string& pool) {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "DELETE FROM quotas WHERE kind = ? AND name = ? AND pool = ?");
  st.bind(1, sched::to_string(kind)).bind(2, name).bind(3, pool).run();
  return sqlite3_changes(db_->get()) > 0;
}

}  // namespace air::server
