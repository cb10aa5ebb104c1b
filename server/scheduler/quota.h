// Quotas per user and per group, per pool (Slurm's MaxTRESPerUser / GrpTRES, Kueue's ClusterQueue quota):
// GPUs running at once and runs queued. Pure: the policy counts what runs against them on every pass, and
// the workspace asks check_submit() before a run is stored. docs/scheduler.md "Quotas".
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace air::server::sched {

inline constexpr const char* kAllPools = "*";

struct Quota {
  enum class Kind { kUser, kGroup };
  Kind kind = Kind::kUser;
  std::string name;              // a user or a group
  std::string pool = kAllPools;  // one pool, or "*": every pool together
  int max_gpus = -1;             // GPUs its runs hold at once; -1: no limit
  int max_queued = -1;           // its runs waiting at once; -1: no limit
};

std::string to_string(Quota::Kind k);  // "user" | "group"
std::optional<Quota::Kind> quota_kind_from_string(const std::string& s);
// "group ml-research" or "group ml-research in pool 'training'" (where the quota is per pool).
std::string quota_subject(const Quota& q);

// What one job is (who and where) as the quota book sees it.
struct QuotaKey {
  std::string user, group, pool;
};

// The GPUs each quota's runs hold during one pass; starts add to it.
class QuotaBook {
 public:
  explicit QuotaBook(const std::vector<Quota>& quotas);
  bool empty() const { return quotas_.empty(); }
  void add(const QuotaKey& k, int gpus);  // a run holding GPUs (running, or started in this pass)
  // The first quota that `gpus` more would exceed, with its GPUs in use; none when it fits every one.
  struct Block {
    const Quota* quota = nullptr;
    int in_use = 0;
  };
  std::optional<Block> blocks(const QuotaKey& k, int gpus) const;
  // The quotas that apply to k (user's and group's, of its pool and of every pool).
  std::vector<const Quota*> applying(const QuotaKey& k) const;

 private:
  int& used(const Quota* q) { return used_[q]; }
  std::vector<Quota> quotas_;
  std::map<const Quota*, int> used_;
};

// The text a run blocked by a quota shows: "quota of group ml-research, 16 of 16 GPUs in use".
std::string describe_block(const QuotaBook::Block& b);

// Whether a run of k counts against q (its user's or group's quota, of its pool or of every pool).
bool applies(const Quota& q, const QuotaKey& k);

// At submit: a run larger than a quota that applies to it can never run within it, and a full quota of
// queued runs refuses another. `queued(q)` says how many runs counted by q wait now. Returns the refusal
// with the numbers ("needs 8 GPUs, but the quota of group ml-research allows 4 at once"), or "".
std::string check_submit(const std::vector<Quota>& quotas, const QuotaKey& k, int gpus,
                         const std::function<int(const Quota&)>& queued);

}  // namespace air::server::sched
