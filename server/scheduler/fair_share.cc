// Decayed usage sums and share look-ups (fair_share.h).
#include "server/scheduler/fair_share.h"

#include <cmath>

namespace air::server::sched {

double DecayedUsage::decay(double v, int64_t from_ms, int64_t to_ms) const {
  if (half_life_ms_ <= 0 || to_ms <= from_ms) return v;
  return v * std::exp2(-double(to_ms - from_ms) / double(half_life_ms_));
}

void DecayedUsage::add(const std::string& key, double amount, int64_t at_ms) {
  Sum& s = sums_[key];
  if (at_ms >= s.as_of_ms) {
    s.value = decay(s.value, s.as_of_ms, at_ms) + amount;
    s.as_of_ms = at_ms;
  } else {  // an older record (a restart reading history): it has decayed already
    s.value += decay(amount, at_ms, s.as_of_ms);
  }
}

double DecayedUsage::at(const std::string& key, int64_t now_ms) const {
  auto it = sums_.find(key);
  return it == sums_.end() ? 0 : decay(it->second.value, it->second.as_of_ms, now_ms);
}

std::map<std::string, double> DecayedUsage::all(int64_t now_ms) const {
  std::map<std::string, double> out;
  for (const auto& [k, s] : sums_) out[k] = decay(s.value, s.as_of_ms, now_ms);
  return out;
}

double FairShareInput::user_share(const std::string& u) const {
  auto it = user_shares.find(u);
  return it == user_shares.end() || it->second <= 0 ? 1.0 : it->second;
}

double FairShareInput::group_share(const std::string& g) const {
  auto it = group_shares.find(g);
  return it == group_shares.end() || it->second <= 0 ? 1.0 : it->second;
}

}  // namespace air::server::sched
