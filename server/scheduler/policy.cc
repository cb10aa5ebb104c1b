// The policy, pool by pool: order the queue (class, then fair share, then submit time), start from the
// front while runs fit (a run over its quota is passed over, not a head), give the first that does not a
// reservation (the earliest time enough GPUs free up if every running run uses its full bound), backfill
// later runs that cannot delay it, lend idle GPUs past quotas (borrowing), and let a CRITICAL head preempt
// BEST_EFFORT runs and a head within its quota reclaim borrowed GPUs. docs/scheduler.md states the rules;
// tests/server/scheduler/ checks each one.
#include "server/scheduler/policy.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

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
  bool known = false;  // from history, not the bound
  bool operator>(const End& o) const { return at > o.at; }
};

// One pool's share of the input, its queue already in order.
struct PoolWork {
  int gpus = 0;
  int free = 0;
  std::vector<const RunningJob*> running;
  std::vector<const QueuedJob*> queue;
};

// What the pass shares across pools: quotas in use, and the running runs that are on borrowed quota.
struct Shared {
  QuotaBook book;
  std::set<const RunningJob*> borrowed;
};

QuotaKey key_of(const QueuedJob& j) { return {j.owner, j.group, j.pool}; }
QuotaKey key_of(const RunningJob& r) { return {r.owner, r.group, r.pool}; }

// Picks the runs to stop for `need` GPUs: the least GPUs in all, then the fewest runs, preferring earlier
// candidates on a tie (0/1 knapsack over GPU sums; a minimal set never exceeds need + the largest run).
std::vector<const RunningJob*> fewest(const std::vector<const RunningJob*>& c, int need) {
  int largest = 0, total = 0;
  for (const RunningJob* r : c) largest = std::max(largest, r->gpus), total += r->gpus;
  if (need <= 0 || total < need) return {};
  int cap = need + largest;
  constexpr int kInf = std::numeric_limits<int>::max() / 2;
  std::vector<int> best(cap + 1, kInf);
  std::vector<std::vector<bool>> took(c.size(), std::vector<bool>(cap + 1, false));
  best[0] = 0;
  for (size_t i = c.size(); i-- > 0;) {  // backwards, so that the earliest candidates win ties
    int g = c[i]->gpus;
    for (int s = cap; s >= g; --s)
      if (best[s - g] + 1 <= best[s] && best[s - g] < kInf) {
        best[s] = best[s - g] + 1;
        took[i][s] = true;
      }
  }
  int s = need;
  while (s <= cap && best[s] >= kInf) ++s;
  if (s > cap) return {};
  std::vector<const RunningJob*> out;
  for (size_t i = 0; i < c.size() && s > 0; ++i)
    if (took[i][s]) {
      out.push_back(c[i]);
      s -= c[i]->gpus;
    }
  return out;
}

class PoolScheduler {
 public:
  PoolScheduler(PoolWork& w, const Input& in, const Options& o, Shared& sh, Decisions& d)
      : w_(w), in_(in), o_(o), sh_(sh), d_(d), started_(w.queue.size(), false), block_(w.queue.size()) {}

  void run() {
    size_t head = start_from_front();
    bool preempting = false;
    if (head < w_.queue.size() && o_.policy != Policy::kFirstFit) {
      preempting = maybe_preempt(*w_.queue[head]);
      if (o_.policy == Policy::kEasyBackfill) backfill(head);
    } else if (head == w_.queue.size() && o_.borrowing) {
      backfill(head);  // nobody within quota waits: over-quota runs may borrow every free GPU
    }
    report(preempting);
  }

 private:
  int64_t bound(int64_t b) const { return b > 0 ? b : o_.default_runtime_ms; }
  // The time a run is expected to take: its history where known (never past its bound), else its bound.
  int64_t expected(int64_t e, int64_t b) const { return e > 0 ? std::min(e, bound(b)) : bound(b); }
  bool fits_pool(const QueuedJob& j) const { return j.gpus <= w_.gpus; }

  void start(size_t i, bool backfill, bool borrowed = false) {
    const QueuedJob& j = *w_.queue[i];
    d_.starts.push_back({j.id, backfill, borrowed});
    started_[i] = true;
    w_.free -= j.gpus;
    sh_.book.add(key_of(j), j.gpus);
    new_ends_.push_back({in_.now_ms + bound(j.runtime_bound_ms), j.gpus});
    new_expected_.push_back({in_.now_ms + expected(j.expected_ms, j.runtime_bound_ms), j.gpus, j.expected_ms > 0});
  }

  // Whether j's quota holds it now (noted for its waiting text).
  bool quota_blocked(size_t i) {
    const QueuedJob& j = *w_.queue[i];
    auto b = sh_.book.blocks(key_of(j), j.gpus);
    block_[i] = b ? describe_block(*b) : "";
    return b.has_value();
  }

  // Strict order: start while the front fits; returns the head's index (the first that does not fit).
  // First-fit goes on past it; a run larger than its pool never starts and never blocks, nor does one
  // its quota holds.
  size_t start_from_front() {
    size_t head = w_.queue.size();
    for (size_t i = 0; i < w_.queue.size(); ++i) {
      const QueuedJob& j = *w_.queue[i];
      if (!fits_pool(j) || quota_blocked(i)) continue;
      if (j.gpus <= w_.free) {
        start(i, false);
      } else {
        if (head == w_.queue.size()) head = i;
        if (o_.policy != Policy::kFirstFit) break;
      }
    }
    return head;
  }

  // A head that does not fit may stop runs of its pool: a CRITICAL head BEST_EFFORT runs (preemption), a
  // head within its quota runs on borrowed quota of other owners (borrowing). Only as many GPUs as it
  // lacks: the set that frees the least GPUs, then the fewest runs, borrowed and recent ones first; none
  // when even all of them would not make room. GPUs of runs already stopping count.
  bool maybe_preempt(const QueuedJob& head) {
    bool critical = o_.preemption && head.priority == PriorityClass::kCritical;
    if (!critical && !o_.borrowing) return false;
    int coming = w_.free;
    bool stopping_for_it = false;
    std::vector<const RunningJob*> candidates;
    for (const RunningJob* r : w_.running) {
      bool borrowed = o_.borrowing && sh_.borrowed.count(r) && r->owner != head.owner;
      bool lesser = critical && r->priority == PriorityClass::kBestEffort;
      if (r->stopping) {
        coming += r->gpus;
        stopping_for_it = stopping_for_it || borrowed || lesser;
      } else if (borrowed || lesser) {
        candidates.push_back(r);
      }
    }
    if (coming >= head.gpus) return stopping_for_it;
    std::sort(candidates.begin(), candidates.end(), [&](const RunningJob* a, const RunningJob* b) {
      bool ba = sh_.borrowed.count(a) > 0, bb = sh_.borrowed.count(b) > 0;
      if (ba != bb) return ba;
      return a->started_ms != b->started_ms ? a->started_ms > b->started_ms : a->id < b->id;
    });
    std::vector<const RunningJob*> chosen = fewest(candidates, head.gpus - coming);
    if (chosen.empty()) return stopping_for_it;
    for (const RunningJob* r : chosen) d_.preemptions.push_back({r->id, head.id, sh_.borrowed.count(r) > 0});
    preempted_ = std::move(chosen);
    return true;
  }

  // When each running run gives its GPUs back, if it uses its full bound (a stopped one: the grace); with
  // `history`, a run with history is assumed to take its usual time (one past it: its bound).
  std::vector<End> ends(bool history) const {
    std::vector<End> out = history ? new_expected_ : new_ends_;
    for (const RunningJob* r : w_.running) {
      bool preempted = std::find(preempted_.begin(), preempted_.end(), r) != preempted_.end();
      if (r->stopping || preempted) {
        out.push_back({in_.now_ms + o_.stop_grace_ms, r->gpus, true});
        continue;
      }
      int64_t at = std::max(in_.now_ms, r->started_ms + bound(r->runtime_bound_ms));
      bool known = false;
      if (history && r->expected_ms > 0 && r->started_ms + r->expected_ms > in_.now_ms) {
        at = std::min(at, r->started_ms + r->expected_ms);
        known = true;
      }
      out.push_back({at, r->gpus, known});
    }
    std::sort(out.begin(), out.end(), [](const End& a, const End& b) { return a.at < b.at; });
    return out;
  }

  // The head's shadow time (when enough GPUs are free for it) and the GPUs spare at that time.
  std::pair<int64_t, int> shadow(int need) const {
    int avail = w_.free;
    int64_t at = in_.now_ms;
    for (const End& e : ends(false)) {
      if (avail >= need) break;
      avail += e.gpus;
      at = e.at;
    }
    return {at, std::max(0, avail - need)};
  }

  // EASY backfill: a later run starts now if it fits the free GPUs and either ends (by its bound) by
  // the head's shadow time or uses only GPUs the head will not need then. With borrowing, runs their
  // quota holds may take such GPUs too (on borrowed quota). No head: shadow time is never.
  void backfill(size_t head) {
    bool has_head = head < w_.queue.size();
    auto [shadow_at, extra] = has_head ? shadow(w_.queue[head]->gpus) : std::pair<int64_t, int>{0, w_.free};
    for (size_t i = 0; i < w_.queue.size(); ++i) {
      if (i == head || started_[i]) continue;
      const QueuedJob& j = *w_.queue[i];
      if (!fits_pool(j) || j.gpus > w_.free) continue;
      bool borrow = quota_blocked(i);
      if (borrow && !o_.borrowing) continue;
      if (!borrow && i < head) continue;  // before the head and not held by its quota: it already started
      bool ends_before = has_head && in_.now_ms + bound(j.runtime_bound_ms) <= shadow_at;
      if (!ends_before && j.gpus > extra) continue;
      start(i, has_head, borrow);
      block_[i].clear();
      if (!ends_before) extra -= j.gpus;
    }
  }

  // When the runs left waiting would start in queue order (no backfill assumed) as the ends free GPUs.
  // Runs their quota holds are not counted (when their quota frees is another matter).
  std::vector<std::optional<int64_t>> starts_at(bool history, std::vector<std::pair<int, int>>* known) const {
    std::vector<End> e = ends(history);
    std::priority_queue<End, std::vector<End>, std::greater<End>> pending(e.begin(), e.end());
    std::vector<std::optional<int64_t>> out(w_.queue.size());
    int avail = w_.free, seen_known = 0, seen = 0;
    int64_t clock = in_.now_ms;
    for (size_t i = 0; i < w_.queue.size(); ++i) {
      const QueuedJob& j = *w_.queue[i];
      if (started_[i] || !fits_pool(j) || !block_[i].empty()) continue;
      while (avail < j.gpus && !pending.empty()) {
        clock = std::max(clock, pending.top().at);
        avail += pending.top().gpus;
        seen_known += pending.top().known ? 1 : 0;
        ++seen;
        pending.pop();
      }
      avail -= j.gpus;
      pending.push({clock + (history ? expected(j.expected_ms, j.runtime_bound_ms) : bound(j.runtime_bound_ms)), j.gpus,
                    j.expected_ms > 0});
      out[i] = clock;
      if (known) (*known)[i] = {seen_known, seen};
    }
    return out;
  }

  // Positions and estimates. An estimate holds if every run takes what its history says (the bound
  // where there is none); the bound estimate if every run uses its full bound. Neither is a promise.
  void report(bool preempting) {
    for (size_t i = 0; i < w_.queue.size(); ++i)  // quotas as they stand after this pass's starts
      if (!started_[i]) quota_blocked(i);
    std::vector<std::pair<int, int>> known(w_.queue.size());
    auto by_history = starts_at(true, &known);
    auto by_bound = starts_at(false, nullptr);
    std::vector<int> passed = passed_by();
    int length = 0, position = 0;
    for (size_t i = 0; i < w_.queue.size(); ++i) length += started_[i] ? 0 : 1;
    bool head_seen = false;
    for (size_t i = 0; i < w_.queue.size(); ++i) {
      if (started_[i]) continue;
      const QueuedJob& j = *w_.queue[i];
      Waiting out{j.id, j.pool, ++position, length, j.gpus, w_.gpus};
      out.quota_block = block_[i];
      out.passed_by = passed[i];
      if (fits_pool(j) && block_[i].empty()) {
        if (!head_seen) {
          out.head = head_seen = true;
          out.reserved_held = std::min(j.gpus, std::max(0, w_.free));
          out.preempting = preempting;
        }
        out.estimated_start_ms = by_history[i];
        out.bound_start_ms = by_bound[i];
        out.estimate_known = known[i].first;
        out.estimate_runs = known[i].second;
      }
      d_.waiting.push_back(std::move(out));
    }
  }

  // Per waiting run: how many runs of its class ahead of it were submitted later (fair share put them
  // first). A Fenwick tree over submit ranks, so 10,000 queued runs cost n log n.
  std::vector<int> passed_by() const {
    std::vector<int> out(w_.queue.size(), 0);
    if (!o_.fair_share || o_.policy == Policy::kFirstFit) return out;
    std::vector<size_t> order;
    for (size_t i = 0; i < w_.queue.size(); ++i)
      if (!started_[i]) order.push_back(i);
    std::vector<size_t> by_submit = order;
    std::sort(by_submit.begin(), by_submit.end(), [&](size_t a, size_t b) {
      const QueuedJob &x = *w_.queue[a], &y = *w_.queue[b];
      if (x.submitted_ms != y.submitted_ms) return x.submitted_ms < y.submitted_ms;
      return x.seq != y.seq ? x.seq < y.seq : x.id < y.id;
    });
    std::vector<int> rank(w_.queue.size(), 0);
    for (size_t r = 0; r < by_submit.size(); ++r) rank[by_submit[r]] = static_cast<int>(r) + 1;
    std::vector<int> tree(by_submit.size() + 1, 0);
    int seen = 0;
    std::optional<PriorityClass> cls;
    for (size_t i : order) {
      if (cls != w_.queue[i]->priority) {  // a new class: only runs of the same class count
        std::fill(tree.begin(), tree.end(), 0);
        seen = 0;
        cls = w_.queue[i]->priority;
      }
      int below = 0;
      for (int k = rank[i]; k > 0; k -= k & -k) below += tree[k];
      out[i] = seen - below;
      for (int k = rank[i]; k < static_cast<int>(tree.size()); k += k & -k) ++tree[k];
      ++seen;
    }
    return out;
  }

  PoolWork& w_;
  const Input& in_;
  const Options& o_;
  Shared& sh_;
  Decisions& d_;
  std::vector<bool> started_;             // per queue index
  std::vector<std::string> block_;        // per queue index: the quota that holds it ("" none)
  std::vector<End> new_ends_;             // runs started in this pass (by their bounds)
  std::vector<End> new_expected_;         // the same by history
  std::vector<const RunningJob*> preempted_;
};

// Fair share levels: GPU-milliseconds (recorded, decayed, plus what running runs used so far, plus the
// runs already placed ahead in this ordering) over shares. A user in no group stands as its own group.
// Owners and groups are numbered once per pass, so ordering 10,000 runs is arithmetic, not map look-ups.
class Levels {
 public:
  Levels(const Input& in, const Options& o) : in_(in), o_(o) {
    for (const RunningJob& r : in.running) {
      double used = double(r.gpus) * double(std::max<int64_t>(0, in.now_ms - r.started_ms));
      int u = user(r.owner, r.group);
      users_[u].used += used;
      if (users_[u].group >= 0) groups_[users_[u].group].used += used;
    }
  }
  // The owner's number (made on first sight, with its recorded usage and share).
  int user(const std::string& name, const std::string& group) {
    auto [it, fresh] = user_index_.try_emplace(name, static_cast<int>(users_.size()));
    if (fresh) {
      int g = -1;
      if (!group.empty()) {
        auto [git, gfresh] = group_index_.try_emplace(group, static_cast<int>(groups_.size()));
        if (gfresh) groups_.push_back({lookup(in_.usage.group_usage, group), in_.usage.group_share(group)});
        g = git->second;
      }
      users_.push_back({lookup(in_.usage.user_usage, name), in_.usage.user_share(name), g});
    }
    return it->second;
  }
  // (group level, user level): the lower goes first.
  std::pair<double, double> of(int u) const {
    const User& x = users_[u];
    double lu = x.used / x.share;
    if (x.group < 0) return {lu, lu};
    return {groups_[x.group].used / groups_[x.group].share, lu};
  }
  void place(int u, const QueuedJob& j) {
    int64_t ms = j.expected_ms > 0 ? j.expected_ms : j.runtime_bound_ms > 0 ? j.runtime_bound_ms : o_.default_runtime_ms;
    double amount = double(j.gpus) * double(ms);
    users_[u].used += amount;
    if (users_[u].group >= 0) groups_[users_[u].group].used += amount;
  }

 private:
  struct User {
    double used, share;
    int group;
  };
  struct Group {
    double used, share;
  };
  static double lookup(const std::map<std::string, double>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  }
  const Input& in_;
  const Options& o_;
  std::vector<User> users_;
  std::vector<Group> groups_;
  std::unordered_map<std::string, int> user_index_, group_index_;
};

bool submit_order(const QueuedJob* a, const QueuedJob* b) {
  if (a->submitted_ms != b->submitted_ms) return a->submitted_ms < b->submitted_ms;
  if (a->seq != b->seq) return a->seq < b->seq;
  return a->id < b->id;
}

// One class of a pool's queue in fair-share order: repeatedly the owner whose (group, user) level is
// lowest places its oldest run, which raises its level by that run's GPUs x expected runtime, so owners
// take turns by share (weighted fair queueing). Levels only grow, so a stale heap entry is re-keyed lazily.
void fair_order(std::vector<const QueuedJob*>::iterator b, std::vector<const QueuedJob*>::iterator e, Levels& lv) {
  std::vector<std::vector<const QueuedJob*>> lists;  // per owner, in submit order (the range is)
  std::vector<int> owner_of;                          // list -> the owner's number
  std::unordered_map<int, size_t> list_of;
  for (auto it = b; it != e; ++it) {
    int u = lv.user((*it)->owner, (*it)->group);
    auto [at, fresh] = list_of.try_emplace(u, lists.size());
    if (fresh) lists.emplace_back(), owner_of.push_back(u);
    lists[at->second].push_back(*it);
  }
  if (lists.size() < 2) return;
  struct Entry {
    std::pair<double, double> level;
    size_t list, k;
    const QueuedJob* next;
    bool operator>(const Entry& o) const {
      if (level != o.level) return level > o.level;
      return submit_order(o.next, next);
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (size_t l = 0; l < lists.size(); ++l) heap.push({lv.of(owner_of[l]), l, 0, lists[l][0]});
  auto out = b;
  while (!heap.empty()) {
    Entry top = heap.top();
    heap.pop();
    auto now = lv.of(owner_of[top.list]);
    if (now != top.level) {
      top.level = now;
      heap.push(top);
      continue;
    }
    *out++ = top.next;
    lv.place(owner_of[top.list], *top.next);
    if (++top.k < lists[top.list].size()) {
      top.next = lists[top.list][top.k];
      top.level = lv.of(owner_of[top.list]);
      heap.push(top);
    }
  }
}

// Queue order: class (CRITICAL first), then (fair share) the owners' levels, then submit time.
// First-fit keeps the order of ids, as the workspace walked its run map before issue 30.
void order_queue(std::vector<const QueuedJob*>& q, const Options& o, const Input& in) {
  if (o.policy == Policy::kFirstFit) {
    std::sort(q.begin(), q.end(), [](const QueuedJob* a, const QueuedJob* b) { return a->id < b->id; });
    return;
  }
  std::sort(q.begin(), q.end(), [&](const QueuedJob* a, const QueuedJob* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return submit_order(a, b);
  });
  if (!o.fair_share) return;
  Levels lv(in, o);
  for (auto b = q.begin(); b != q.end();) {
    auto e = std::find_if(b, q.end(), [&](const QueuedJob* j) { return j->priority != (*b)->priority; });
    fair_order(b, e, lv);
    b = e;
  }
}

// The running runs past their quotas: per quota, the most recently started runs beyond its GPUs.
std::set<const RunningJob*> borrowed_runs(const Input& in, const QuotaBook& book) {
  std::set<const RunningJob*> out;
  if (book.empty()) return out;
  std::map<const Quota*, std::vector<const RunningJob*>> per;
  for (const RunningJob& r : in.running)
    for (const Quota* q : book.applying(key_of(r))) per[q].push_back(&r);
  for (auto& [q, rs] : per) {
    std::sort(rs.begin(), rs.end(), [](const RunningJob* a, const RunningJob* b) {
      return a->started_ms != b->started_ms ? a->started_ms < b->started_ms : a->id < b->id;
    });
    int held = 0;
    for (const RunningJob* r : rs) {
      held += r->gpus;
      if (held > q->max_gpus) out.insert(r);
    }
  }
  return out;
}

}  // namespace

Decisions decide(const Input& in, const Options& opts) {
  std::map<std::string, PoolWork> pools;
  for (const Pool& p : in.pools) pools[p.name] = PoolWork{p.gpus, p.gpus, {}, {}};
  Shared shared{QuotaBook(in.quotas), {}};
  for (const RunningJob& r : in.running) {
    shared.book.add(key_of(r), r.gpus);
    auto it = pools.find(r.pool);
    if (it == pools.end()) continue;
    it->second.running.push_back(&r);
    it->second.free -= r.gpus;
  }
  shared.borrowed = borrowed_runs(in, shared.book);
  Decisions d;
  d.waiting.reserve(in.queued.size());
  for (const QueuedJob& j : in.queued) {
    auto it = pools.find(j.pool);
    if (it != pools.end()) it->second.queue.push_back(&j);
    else d.waiting.push_back(Waiting{j.id, j.pool, 0, 0, j.gpus, 0});  // a pool the server no longer has
  }
  for (auto& [name, w] : pools) {
    order_queue(w.queue, opts, in);
    PoolScheduler(w, in, opts, shared, d).run();
  }
  return d;
}

}  // namespace air::server::sched
