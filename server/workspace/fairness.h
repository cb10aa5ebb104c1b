// The workspace's fair-share part: what the policy weighs beyond the run table (each owner's group, decayed
// usage and share, the quotas, runtimes from history), the usage records written at every attempt's end,
// and the quota check at submit. Its own lock; the queue calls it with the run lock held, the routes
// (server/api/scheduling.cc) without. docs/scheduler.md "Fair share", "Quotas", "Usage".
#pragma once
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "core/wire/run_state.h"
#include "server/scheduler/fair_config.h"
#include "server/scheduler/fair_share.h"
#include "server/scheduler/policy.h"
#include "server/store/usage.h"

namespace air::server {

class IdentityStore;
class RunTable;
struct RunRecord;

class Fairness {
 public:
  // Reads the usage history back (the decayed sums and the runtimes estimates use). `pools`: the names a
  // quota may name (besides "*"); a server.conf quota naming another is an error (air::Error).
  Fairness(const std::string& db_path, sched::FairConfig conf, const IdentityStore& ids, std::function<int64_t()> now,
           std::vector<std::string> pools);

  // The group a user's runs count in: of its groups (not the built-in `users` and `admins`), the first by
  // name that has a share or a quota, else the first by name; "" for none.
  std::string group_of(const std::string& user) const;
  // Fair share and borrowing on or off, as server.conf says.
  void options(sched::Options& o) const;
  // Fills in what the queue cannot know: groups, usage, shares, quotas, each run's usual runtime.
  void feed(sched::Input& in, const RunTable& runs) const;
  // At an attempt's end (once per attempt; a second call is ignored): its usage record and history.
  void record(const RunRecord& r, const api::AttemptInfo& a, RunState end);
  // At submit (run lock held): why a run of `gpus` GPUs by `user` in `pool` is refused, or "".
  std::string refusal(const std::string& user, const std::string& pool, int gpus, const RunTable& runs) const;

  // Quotas: server.conf's, then the admin-set ones (which replace the file's of the same user/group/pool).
  std::vector<QuotaEntry> quotas() const;
  // Throws HttpError 400 for a pool this workspace does not have.
  void set_quota(const sched::Quota& q, const std::string& by);
  bool remove_quota(sched::Quota::Kind kind, const std::string& name, const std::string& pool);
  // Usage records that ended at or after since_ms (only `user`'s where given).
  std::vector<UsageRecord> usage_since(int64_t since_ms, const std::string& user = "") const;
  const sched::FairConfig& config() const { return conf_; }
  // The key "the same workload" is known by (owner, experiment, workload file).
  static std::string workload_key(const api::RunInfo& i);

 private:
  std::vector<sched::Quota> effective_quotas() const;  // with mu_ held
  std::string group_locked(const std::string& user) const;
  std::string unknown_pool(const std::string& pool) const;  // why `pool` is not one of pools_ ("" when it is)
  void learn(const UsageRecord& rec);  // with mu_ held

  sched::FairConfig conf_;
  std::vector<std::string> pools_;
  const IdentityStore& ids_;
  std::function<int64_t()> now_;
  UsageStore store_;
  mutable std::mutex mu_;
  sched::DecayedUsage users_, groups_;
  std::map<std::string, std::deque<int64_t>> workload_runtimes_, owner_runtimes_;  // recent SUCCEEDED attempts
  std::vector<QuotaEntry> admin_quotas_;
};

}  // namespace air::server
