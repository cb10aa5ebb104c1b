// Who used the GPUs: one record per attempt (GPU-seconds and wall time, with its user, group, pool,
// priority class and usage_policy_name), and the quotas an admin set (`air quotas set`), in the
// workspace's SQLite database. Records are written once per attempt at its end and survive restarts.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/scheduler/quota.h"

namespace air::server {

namespace sql { class Db; }

struct UsageRecord {
  std::string run_id;
  int attempt = 1;
  std::string user, group, pool, priority_class, usage_policy_name;
  std::string workload;  // what "the same workload" means for estimates: owner/experiment/file
  std::string state;     // how the attempt ended (SUCCEEDED, FAILED, PREEMPTED, ...)
  int gpus = 0;
  int64_t started_ms = 0, ended_ms = 0;
  int64_t wall_ms() const { return ended_ms > started_ms ? ended_ms - started_ms : 0; }
  int64_t gpu_ms() const { return wall_ms() * gpus; }
};

// A sum of records by one key (`air usage --by user|group|pool|class|policy`).
struct UsageTotal {
  std::string key;
  int64_t gpu_ms = 0, wall_ms = 0;
  int attempts = 0, runs = 0;
};

struct QuotaEntry {
  sched::Quota quota;
  std::string set_by;  // who set it ("server.conf" for the file's)
  int64_t set_ms = 0;
};

class UsageStore {
 public:
  // Opens its own connection and creates the tables when missing.
  explicit UsageStore(const std::string& db_path);
  ~UsageStore();

  // Once per attempt: a second record of the same (run, attempt) is ignored. Returns whether it was new.
  bool record(const UsageRecord& r);
  // Attempts that ended at or after since_ms, oldest first; only `user`'s where given.
  std::vector<UsageRecord> since(int64_t since_ms, const std::string& user = "") const;
  // By "user", "group", "pool", "class" or "policy"; largest GPU time first.
  static std::vector<UsageTotal> totals(const std::vector<UsageRecord>& records, const std::string& by);

  std::vector<QuotaEntry> quotas() const;
  void set_quota(const sched::Quota& q, const std::string& set_by, int64_t now_ms);  // replaces the same key
  bool remove_quota(sched::Quota::Kind kind, const std::string& name, const std::string& pool);

 private:
  std::unique_ptr<sql::Db> db_;
  mutable std::mutex mu_;
};

}  // namespace air::server
