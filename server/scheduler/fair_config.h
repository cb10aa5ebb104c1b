// server.conf's fair-share and quota sections (docs/scheduler.md "Configuration"):
//
//   [fair_share]
//   enabled = true             # order each class by decayed usage against shares (default true)
//   half_life_hours = 168      # usage halves every week (0: never decays)
//   borrowing = false          # runs over their quota may use idle GPUs, given back by preemption
//   [shares]
//   group ml-research = 10     # a user or group without a line has 1
//   user alice = 2
//   [quotas]
//   group ml-research = 16 gpus, 200 queued      # every pool together
//   user alice pool training = 4 gpus            # one pool
//
// Names never hold spaces (docs/security.md: user and group names), so a key is words split by spaces.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/scheduler/quota.h"

namespace air::server::sched {

struct FairConfig {
  bool enabled = true;
  int64_t half_life_ms = 7 * 24 * 3600 * 1000LL;
  bool borrowing = false;
  std::map<std::string, double> user_shares, group_shares;
  std::vector<Quota> quotas;  // from the file; admin-set ones (`air quotas set`) are kept in the database
};

// The sections this file reads.
bool is_fair_section(const std::string& section);
// One `key = value` line of such a section; returns the error ("" when the line is good). The caller adds
// the file and line, as for every other line of server.conf.
std::string read_fair_line(FairConfig& c, const std::string& section, const std::string& key, const std::string& value);
// "16 gpus, 200 queued" -> the quota's limits; the error ("" when good).
std::string parse_quota_limits(const std::string& value, Quota& q);

}  // namespace air::server::sched
