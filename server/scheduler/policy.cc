// The policy, pool by pool: order the queue (class, then submit time), start from the front while runs
// fit, give the first that does not a reservation (the earliest time enough GPUs free up if every
// running run uses its full bound), backfill later runs that cannot delay it, and let a CRITICAL head
// preempt BEST_EFFORT runs. docs/scheduler.md states the rules; tests/server/scheduler/ checks each one.
#include "server/scheduler/policy.h"

#include <algorithm>
#include <map>
#include <queue>

namespace air::server::sched {

std::optional<PriorityClass> priority_from_string(std::string_view s) {
  if (s.empty() || s == "NORMAL") return PriorityClass::kNormal;
  if (s == "BEST_EFFORT") return PriorityClass::kBestEffort;
  if (s == "CRITICAL") return PriorityClass::kCritical;
  return std::nullopt;
}

std::string to_string(PriorityClass p) {
  switch (p) {
    case PriorityClass::kBestEffort: return "BEST_EFFORT";
    case PriorityClass::kCritical: return "CRITICAL";
    default: return "NORMAL";
  }
}

namespace {

struct End {
  int64_t at;
  int gpus;
  bool operator>(const End& o) const { return at > o.at; }
};

// One pool's share of the input, its queue already in order.
struct PoolWork {
  int gpus = 0;
  int free = 0;
  std::vector<const RunningJob*> running;
  std::vector<const QueuedJob*> queue;
};

class PoolScheduler {
 public:
  PoolScheduler(PoolWork& w, const Input& in, const Options& o, Decisions& d)
      : w_(w), in_(in), o_(o), d_(d), started_(w.queue.size(), false) {}

  void run() {
    size_t head = start_from_front();
    bool preempting = false;
    if (head < w_.queue.size() && o_.policy != Policy::kFirstFit) {
      preempting = maybe_preempt(*w_.queue[head]);
      if (o_.policy == Policy::kEasyBackfill) backfill(head);
    }
    report(preempting);
  }

 private:
  int64_t bound(int64_t b) const { return b > 0 ? b : o_.default_runtime_ms; }
  bool fits_pool(const QueuedJob& j) const { return j.gpus <= w_.gpus; }

  void start(size_t i, bool backfill) {
    const QueuedJob& j = *w_.queue[i];
    d_.starts.push_back({j.id, backfill});
    started_[i] = true;
    w_.free -= j.gpus;
    new_ends_.push_back({in_.now_ms + bound(j.runtime_bound_ms), j.gpus});
  }

  // Strict order: start while the front fits; returns the head's index (the first that does not fit).
  // First-fit goes on past it; a run larger than its pool never starts and never blocks.
  size_t start_from_front() {
    size_t head = w_.queue.size();
    for (size_t i = 0; i < w_.queue.size(); ++i) {
      const QueuedJob& j = *w_.queue[i];
      if (!fits_pool(j)) continue;
      if (j.gpus <= w_.free) {
        start(i, false);
      } else {
        if (head == w_.queue.size()) head = i;
        if (o_.policy != Policy::kFirstFit) break;
      }
    }
    return head;
  }

  // A CRITICAL head that does not fit stops the most recently started BEST_EFFORT runs of its pool: the
  // fewest that make room, none when even all of them would not. GPUs of runs already stopping count.
  bool maybe_preempt(const QueuedJob& head) {
    if (!o_.preemption || head.priority != PriorityClass::kCritical) return false;
    int coming = w_.free;
    bool stopping_best_effort = false;
    std::vector<const RunningJob*> candidates;
    for (const RunningJob* r : w_.running) {
      if (r->stopping) {
        coming += r->gpus;
        stopping_best_effort = stopping_best_effort || r->priority == PriorityClass::kBestEffort;
      } else if (r->priority == PriorityClass::kBestEffort) {
        candidates.push_back(r);
      }
    }
    if (coming >= head.gpus) return stopping_best_effort;
    std::sort(candidates.begin(), candidates.end(), [](const RunningJob* a, const RunningJob* b) {
      return a->started_ms != b->started_ms ? a->started_ms > b->started_ms : a->id < b->id;
    });
    std::vector<const RunningJob*> chosen;
    for (const RunningJob* r : candidates) {
      if (coming >= head.gpus) break;
      chosen.push_back(r);
      coming += r->gpus;
    }
    if (coming < head.gpus) return stopping_best_effort;
    for (const RunningJob* r : chosen) d_.preemptions.push_back({r->id, head.id});
    preempted_ = std::move(chosen);
    return true;
  }

  // When each running run gives its GPUs back, if it uses its full bound (a stopped one: the grace).
  std::vector<End> ends() const {
    std::vector<End> out = new_ends_;
    for (const RunningJob* r : w_.running) {
      bool preempted = std::find(preempted_.begin(), preempted_.end(), r) != preempted_.end();
      int64_t at = r->stopping || preempted ? in_.now_ms + o_.stop_grace_ms
                                            : std::max(in_.now_ms, r->started_ms + bound(r->runtime_bound_ms));
      out.push_back({at, r->gpus});
    }
    std::sort(out.begin(), out.end(), [](const End& a, const End& b) { return a.at < b.at; });
    return out;
  }

  // The head's shadow time (when enough GPUs are free for it) and the GPUs spare at that time.
  std::pair<int64_t, int> shadow(int need) const {
    int avail = w_.free;
    int64_t at = in_.now_ms;
    for (const End& e : ends()) {
      if (avail >= need) break;
      avail += e.gpus;
      at = e.at;
    }
    return {at, std::max(0, avail - need)};
  }

  // EASY backfill: a later run starts now if it fits the free GPUs and either ends (by its bound) by
  // the head's shadow time or uses only GPUs the head will not need then.
  void backfill(size_t head) {
    auto [shadow_at, extra] = shadow(w_.queue[head]->gpus);
    for (size_t i = head + 1; i < w_.queue.size(); ++i) {
      const QueuedJob& j = *w_.queue[i];
      if (!fits_pool(j) || j.gpus > w_.free) continue;
      bool ends_before = in_.now_ms + bound(j.runtime_bound_ms) <= shadow_at;
      if (!ends_before && j.gpus > extra) continue;
      start(i, true);
      if (!ends_before) extra -= j.gpus;
    }
  }

  // Positions and estimates: the runs left waiting start in queue order (no backfill assumed) as the
  // expected ends free GPUs. An estimate holds if every run uses its full bound; it is not a promise.
  void report(bool preempting) {
    std::vector<End> e = ends();
    std::priority_queue<End, std::vector<End>, std::greater<End>> pending(e.begin(), e.end());
    int length = 0, position = 0, avail = w_.free;
    for (size_t i = 0; i < w_.queue.size(); ++i) length += started_[i] ? 0 : 1;
    int64_t clock = in_.now_ms;
    bool head_seen = false;
    for (size_t i = 0; i < w_.queue.size(); ++i) {
      if (started_[i]) continue;
      const QueuedJob& j = *w_.queue[i];
      Waiting out{j.id, j.pool, ++position, length, j.gpus, w_.gpus};
      if (fits_pool(j)) {
        if (!head_seen) {
          out.head = head_seen = true;
          out.reserved_held = std::min(j.gpus, std::max(0, w_.free));
          out.preempting = preempting;
        }
        while (avail < j.gpus && !pending.empty()) {
          clock = std::max(clock, pending.top().at);
          avail += pending.top().gpus;
          pending.pop();
        }
        avail -= j.gpus;
        pending.push({clock + bound(j.runtime_bound_ms), j.gpus});
        out.estimated_start_ms = clock;
      }
      d_.waiting.push_back(std::move(out));
    }
  }

  PoolWork& w_;
  const Input& in_;
  const Options& o_;
  Decisions& d_;
  std::vector<bool> started_;             // per queue index
  std::vector<End> new_ends_;             // runs started in this pass
  std::vector<const RunningJob*> preempted_;
};

// Queue order: class (CRITICAL first), then (fair share) the owner's running GPUs, then submit time.
// First-fit keeps the order of ids, as the workspace walked its run map before issue 30.
void order_queue(std::vector<const QueuedJob*>& q, const Options& o, const std::map<std::string, int>& owner_gpus) {
  if (o.policy == Policy::kFirstFit) {
    std::sort(q.begin(), q.end(), [](const QueuedJob* a, const QueuedJob* b) { return a->id < b->id; });
    return;
  }
  auto share = [&](const QueuedJob* j) {
    if (!o.fair_share) return 0;
    auto it = owner_gpus.find(j->owner);
    return it == owner_gpus.end() ? 0 : it->second;
  };
  std::sort(q.begin(), q.end(), [&](const QueuedJob* a, const QueuedJob* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (int sa = share(a), sb = share(b); sa != sb) return sa < sb;
    if (a->submitted_ms != b->submitted_ms) return a->submitted_ms < b->submitted_ms;
    if (a->seq != b->seq) return a->seq < b->seq;
    return a->id < b->id;
  });
}

}  // namespace

Decisions decide(const Input& in, const Options& opts) {
  std::map<std::string, PoolWork> pools;
  for (const Pool& p : in.pools) pools[p.name] = PoolWork{p.gpus, p.gpus, {}, {}};
  std::map<std::string, int> owner_gpus;
  for (const RunningJob& r : in.running) {
    owner_gpus[r.owner] += r.gpus;
    auto it = pools.find(r.pool);
    if (it == pools.end()) continue;
    it->second.running.push_back(&r);
    it->second.free -= r.gpus;
  }
  Decisions d;
  d.waiting.reserve(in.queued.size());
  for (const QueuedJob& j : in.queued) {
    auto it = pools.find(j.pool);
    if (it != pools.end()) it->second.queue.push_back(&j);
    else d.waiting.push_back(Waiting{j.id, j.pool, 0, 0, j.gpus, 0});  // a pool the server no longer has
  }
  for (auto& [name, w] : pools) {
    order_queue(w.queue, opts, owner_gpus);
    PoolScheduler(w, in, opts, d).run();
  }
  return d;
}

}  // namespace air::server::sched
