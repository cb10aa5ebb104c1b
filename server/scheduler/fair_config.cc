// Reading server.conf's [fair_share], [shares] and [quotas] lines (fair_config.h).
#include "server/scheduler/fair_config.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <sstream>

namespace air::server::sched {

namespace {

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::optional<double> number(const std::string& s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int> whole(const std::string& s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string boolean(const std::string& key, const std::string& value, bool& out) {
  if (value != "true" && value != "false") return fmt::format("'{}' must be true or false, got '{}'", key, value);
  out = value == "true";
  return "";
}

}  // namespace

bool is_fair_section(const std::string& section) {
  return section == "fair_share" || section == "shares" || section == "quotas";
}

std::string parse_quota_limits(const std::string& value, Quota& q) {
  q.max_gpus = q.max_queued = -1;
  std::string text = value;
  for (char& ch : text) ch = ch == ',' ? ' ' : ch;
  std::vector<std::string> w = words(text);
  if (w.empty() || w.size() % 2) return fmt::format("expected limits like '16 gpus, 200 queued', got '{}'", value);
  for (size_t i = 0; i < w.size(); i += 2) {
    auto n = whole(w[i]);
    if (!n) return fmt::format("'{}' is not a whole number >= 0 (in '{}')", w[i], value);
    const std::string& unit = w[i + 1];
    if (unit != "gpus" && unit != "gpu" && unit != "queued") return fmt::format("unknown limit '{}' (gpus or queued)", unit);
    int& slot = unit == "queued" ? q.max_queued : q.max_gpus;
    if (slot >= 0) return fmt::format("'{}' is given twice in '{}'", w[i + 1], value);
    slot = *n;
  }
  return "";
}

std::string read_fair_line(FairConfig& c, const std::string& section, const std::string& key, const std::string& value) {
  if (section == "fair_share") {
    if (key == "enabled") return boolean(key, value, c.enabled);
    if (key == "borrowing") return boolean(key, value, c.borrowing);
    if (key == "half_life_hours") {
      auto h = number(value);
      if (!h || *h < 0) return fmt::format("'half_life_hours' must be a number >= 0, got '{}'", value);
      c.half_life_ms = static_cast<int64_t>(*h * 3600 * 1000);
      return "";
    }
    return fmt::format("unknown key '{}' in [fair_share] (enabled, half_life_hours, borrowing)", key);
  }
  std::vector<std::string> k = words(key);
  if (k.size() < 2 || (k[0] != "user" && k[0] != "group"))
    return fmt::format("expected 'user NAME' or 'group NAME' before '=', got '{}'", key);
  if (section == "shares") {
    if (k.size() != 2) return fmt::format("expected 'user NAME' or 'group NAME' before '=', got '{}'", key);
    auto v = number(value);
    if (!v || *v <= 0) return fmt::format("the share of {} must be a number > 0, got '{}'", key, value);
    auto& m = k[0] == "user" ? c.user_shares : c.group_shares;
    if (m.count(k[1])) return fmt::format("the share of {} is given twice", key);
    m[k[1]] = *v;
    return "";
  }
  Quota q;
  q.kind = k[0] == "user" ? Quota::Kind::kUser : Quota::Kind::kGroup;
  q.name = k[1];
  if (k.size() == 4 && k[2] == "pool") q.pool = k[3];
  else if (k.size() != 2)
    return fmt::format("expected '{} {}' or '{} {} pool POOL' before '=', got '{}'", k[0], k[1], k[0], k[1], key);
  if (std::string why = parse_quota_limits(value, q); !why.empty()) return why;
  for (const Quota& o : c.quotas)
    if (o.kind == q.kind && o.name == q.name && o.pool == q.pool) return fmt::format("the quota of {} is given twice", key);
  c.quotas.push_back(q);
  return "";
}

}  // namespace air::server::sched
