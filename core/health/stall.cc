// The stall and straggler rules (see core/health/stall.h).
#include "core/health/stall.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace air::health {

std::string describe_duration(int64_t ms) {
  double s = static_cast<double>(ms) / 1000.0;
  if (s < 120) return fmt::format("{:.3g} s", s);
  if (s < 7200) return fmt::format("{:.3g} min", s / 60);
  return fmt::format("{:.3g} h", s / 3600);
}

StallFinding judge_stall(const NodeActivity& n, const StallPolicy& p, int64_t now_ms) {
  StallFinding f;
  f.rank = n.rank;
  double minutes;
  if (p.timeout_minutes) minutes = *p.timeout_minutes;
  else if (n.gpu_count > 0) minutes = kDefaultStallMinutes;
  else return f;
  if (minutes <= 0) return f;
  const bool gpus = n.gpu_count > 0;
  const int64_t since = std::max({n.watched_since_ms, n.last_output_ms, gpus ? n.gpu_busy_ms : int64_t(0)});
  f.quiet_ms = now_ms - since;
  const auto limit = static_cast<int64_t>(minutes * static_cast<double>(p.minute_ms));
  if (f.quiet_ms >= limit) {
    f.verdict = Verdict::kStalled;
    f.message = gpus ? fmt::format("node {} stalled: no log line or metric and GPUs idle for {} "
                                   "(stall_timeout_minutes {:g})",
                                   n.rank, describe_duration(f.quiet_ms), minutes)
                     : fmt::format("node {} stalled: no log line or metric for {:.3g} s (stall_timeout_minutes {:g})",
                                   n.rank, static_cast<double>(f.quiet_ms) / 1000.0, minutes);
  } else if (f.quiet_ms >= limit / 2) {
    f.verdict = Verdict::kAlert;
    f.message = fmt::format("node {}: no output{} for {}; the attempt ends if it stays so for {} "
                            "(stall_timeout_minutes {:g})",
                            n.rank, gpus ? " and GPUs idle" : "", describe_duration(f.quiet_ms),
                            describe_duration(limit), minutes);
  }
  return f;
}

void StepClock::observe(int rank, int64_t step, int64_t now_ms) {
  steps_[rank] = step;
  if (step > max_step_) {
    // Every step from the old leading step to step - 1 was passed now: one entry keyed by the last of them
    // (a lookup takes the first entry at or above a node's step).
    passed_[step - 1] = now_ms;
    max_step_ = step;
  }
  // Entries below every node's step are not needed again.
  int64_t lowest = max_step_;
  for (const auto& [r, s] : steps_) lowest = std::min(lowest, s);
  passed_.erase(passed_.begin(), passed_.lower_bound(lowest));
}

int64_t StepClock::lag_ms(int rank, int64_t now_ms) const {
  auto it = steps_.find(rank);
  if (it == steps_.end() || it->second >= max_step_) return 0;
  // The first record at or above this node's step: the moment the leader went past it.
  auto p = passed_.lower_bound(it->second);
  return p == passed_.end() ? 0 : now_ms - p->second;
}

std::optional<int64_t> StepClock::step(int rank) const {
  auto it = steps_.find(rank);
  return it == steps_.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

std::optional<int> StepClock::leader() const {
  std::optional<int> best;
  for (const auto& [r, s] : steps_)
    if (!best || s > steps_.at(*best)) best = r;
  return best;
}

std::vector<StragglerFinding> find_stragglers(const StepClock& clock, const std::vector<int>& ranks, double minutes,
                                              int64_t minute_ms, int64_t now_ms) {
  std::vector<StragglerFinding> out;
  auto leader = clock.leader();
  if (minutes <= 0 || !leader) return out;
  const auto limit = static_cast<int64_t>(minutes * static_cast<double>(minute_ms));
  for (int r : ranks) {
    int64_t lag = clock.lag_ms(r, now_ms);
    if (lag < limit || !clock.step(r)) continue;
    out.push_back({r, lag,
                   fmt::format("node {} is a straggler: at step {} while node {} is at step {} (behind by {})", r,
                               *clock.step(r), *leader, *clock.step(*leader), describe_duration(lag))});
  }
  return out;
}

struct StepPattern::Impl {
  std::optional<std::regex> re;
};

StepPattern::StepPattern(const std::string& pattern) : impl_(std::make_shared<Impl>()) {
  if (!pattern.empty()) impl_->re.emplace(pattern, std::regex::ECMAScript | std::regex::optimize);
}

namespace {

// "step N" or "Step N" at the start of the line (after spaces), N followed by a non-digit or the end.
std::optional<int64_t> default_step(const std::string& line) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  if (line.compare(i, 5, "step ") != 0 && line.compare(i, 5, "Step ") != 0) return std::nullopt;
  i += 5;
  size_t start = i;
  int64_t v = 0;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) && i - start < 18) v = v * 10 + (line[i++] - '0');
  if (i == start) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int64_t> StepPattern::match(const std::string& line) const {
  if (!impl_->re) return default_step(line);
  std::smatch m;
  if (!std::regex_search(line, m, *impl_->re) || m.size() < 2 || !m[1].matched) return std::nullopt;
  const std::string s = m[1].str();
  if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  return std::stoll(s);
}

}  // namespace air::health
