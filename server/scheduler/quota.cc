// Quotas: which apply to a run, what they hold during a pass, and the refusals at submit (quota.h).
#include "server/scheduler/quota.h"

#include <fmt/format.h>

namespace air::server::sched {

std::string to_string(Quota::Kind k) { return k == Quota::Kind::kGroup ? "group" : "user"; }

std::optional<Quota::Kind> quota_kind_from_string(const std::string& s) {
  if (s == "user") return Quota::Kind::kUser;
  if (s == "group") return Quota::Kind::kGroup;
  return std::nullopt;
}

std::string quota_subject(const Quota& q) {
  std::string s = to_string(q.kind) + " " + q.name;
  if (q.pool != kAllPools) s += fmt::format(" in pool '{}'", q.pool);
  return s;
}

bool applies(const Quota& q, const QuotaKey& k) {
  if (q.pool != kAllPools && q.pool != k.pool) return false;
  if (q.kind == Quota::Kind::kUser) return q.name == k.user;
  return !k.group.empty() && q.name == k.group;
}

QuotaBook::QuotaBook(const std::vector<Quota>& quotas) {
  for (const Quota& q : quotas)
    if (q.max_gpus >= 0) quotas_.push_back(q);
}

std::vector<const Quota*> QuotaBook::applying(const QuotaKey& k) const {
  std::vector<const Quota*> out;
  for (const Quota& q : quotas_)
    if (applies(q, k)) out.push_back(&q);
  return out;
}

void QuotaBook::add(const QuotaKey& k, int gpus) {
  for (const Quota* q : applying(k)) used(q) += gpus;
}

std::optional<QuotaBook::Block> QuotaBook::blocks(const QuotaKey& k, int gpus) const {
  if (gpus <= 0) return std::nullopt;  // a CPU run holds no GPUs
  for (const Quota* q : applying(k)) {
    auto it = used_.find(q);
    int in_use = it == used_.end() ? 0 : it->second;
    if (in_use + gpus > q->max_gpus) return Block{q, in_use};
  }
  return std::nullopt;
}

std::string describe_block(const QuotaBook::Block& b) {
  return fmt::format("quota of {}, {} of {} GPU{} in use", quota_subject(*b.quota), b.in_use, b.quota->max_gpus,
                     b.quota->max_gpus == 1 ? "" : "s");
}

std::string check_submit(const std::vector<Quota>& quotas, const QuotaKey& k, int gpus,
                         const std::function<int(const Quota&)>& queued) {
  for (const Quota& q : quotas) {
    if (!applies(q, k)) continue;
    if (q.max_gpus >= 0 && gpus > q.max_gpus)
      return fmt::format("the run needs {} GPU{}, but the quota of {} allows {} at once", gpus, gpus == 1 ? "" : "s",
                         quota_subject(q), q.max_gpus);
    if (q.max_queued >= 0) {
      int n = queued(q);
      if (n >= q.max_queued)
        return fmt::format("the quota of {} allows {} queued run{}, and {} {} waiting", quota_subject(q), q.max_queued,
                           q.max_queued == 1 ? "" : "s", n, n == 1 ? "is" : "are");
    }
  }
  return "";
}

}  // namespace air::server::sched
