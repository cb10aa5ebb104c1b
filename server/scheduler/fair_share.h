// Fair share between the members of a team (Slurm's fair-share factor and Fair Tree, Kueue's fair sharing
// by weight): an owner's GPU usage decays with a half-life and is weighed against the owner's share.
// Pure: DecayedUsage keeps the sums, the policy (policy.cc) orders each class of a pool's queue by them.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace air::server::sched {

// Usage that halves every half_life_ms (0: never decays), summed per key. Kept as (value, as of): adding
// and reading decay the sum to the time asked, so an old record weighs 2^(-age / half-life) of a new one.
class DecayedUsage {
 public:
  explicit DecayedUsage(int64_t half_life_ms = 0) : half_life_ms_(half_life_ms) {}
  void add(const std::string& key, double amount, int64_t at_ms);
  double at(const std::string& key, int64_t now_ms) const;
  std::map<std::string, double> all(int64_t now_ms) const;
  int64_t half_life_ms() const { return half_life_ms_; }

 private:
  double decay(double v, int64_t from_ms, int64_t to_ms) const;
  struct Sum {
    double value = 0;
    int64_t as_of_ms = 0;
  };
  int64_t half_life_ms_;
  std::map<std::string, Sum> sums_;
};

// What fair share is weighed from: recorded usage (decayed to now, GPU-milliseconds) and shares. A user
// or group without a share has 1. Runs still going count too (the policy adds their GPU time so far).
struct FairShareInput {
  std::map<std::string, double> user_usage, group_usage;
  std::map<std::string, double> user_shares, group_shares;
  double user_share(const std::string& u) const;
  double group_share(const std::string& g) const;
};

}  // namespace air::server::sched
