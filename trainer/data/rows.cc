// An epoch's rows (rows.h): the seeded order and the packing.
#include "trainer/data/rows.h"

#include <algorithm>
#include <random>
#include <set>

namespace air::train {

void seeded_shuffle(std::vector<uint32_t>& v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
}

EpochRows::EpochRows(const ExampleSet& set, const RowOptions& o, int64_t epoch) {
  items_.resize(set.size());
  for (size_t i = 0; i < items_.size(); ++i) items_[i] = static_cast<uint32_t>(i);
  seeded_shuffle(items_, o.seed * 1000003ull + static_cast<uint64_t>(epoch));
  if (!o.packing) return;
  if (o.best_fit) {
    pack_best_fit(set, o, epoch);
    return;
  }
  // Greedy packing in shuffled order: a row closes when the next example would not fit.
  starts_.push_back(0);
  int64_t used = 0;
  for (size_t k = 0; k < items_.size(); ++k) {
    const int64_t n = std::min<int64_t>(set.length(items_[k]), o.max_seq_len);
    if (k > starts_.back() && used + n > o.max_seq_len) {
      starts_.push_back(k);
      used = 0;
    }
    used += n;
  }
  if (!items_.empty()) starts_.push_back(items_.size());
  starts_.shrink_to_fit();
}

// Best-fit decreasing over the shuffled order: examples by length, longest first (a stable counting sort,
// so equal lengths keep the shuffled order and each epoch packs differently), each into the open row with
// the least room that still holds it, else a new row; the rows are then shuffled with the epoch's seed. Open
// rows are kept by their room (a stack per room and the set of rooms that have one), rows' examples as a
// linked list: memory stays a few bytes per example. TRL's `bfd` packing is the same idea.
void EpochRows::pack_best_fit(const ExampleSet& set, const RowOptions& o, int64_t epoch) {
  const int64_t T = std::max<int64_t>(o.max_seq_len, 1);
  const size_t n = items_.size();
  auto len = [&](uint32_t i) { return std::min<int64_t>(set.length(i), T); };
  std::vector<uint64_t> first(static_cast<size_t>(T) + 2, 0);  // counting sort by length, longest first
  for (uint32_t i : items_) ++first[static_cast<size_t>(T - len(i)) + 1];
  for (size_t b = 1; b < first.size(); ++b) first[b] += first[b - 1];
  std::vector<uint32_t> sorted(n);
  for (uint32_t i : items_) sorted[first[static_cast<size_t>(T - len(i))]++] = i;

  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> next(set.size(), kNone), head, tail;
  std::vector<std::vector<uint32_t>> open(static_cast<size_t>(T) + 1);  // room -> rows with that room
  std::set<int64_t> rooms;                                              // rooms that have an open row
  for (uint32_t i : sorted) {
    const int64_t need = len(i);
    uint32_t row;
    int64_t room;
    auto it = rooms.lower_bound(need);
    if (it != rooms.end()) {
      room = *it;
      row = open[static_cast<size_t>(room)].back();
      open[static_cast<size_t>(room)].pop_back();
      if (open[static_cast<size_t>(room)].empty()) rooms.erase(it);
      next[tail[row]] = i;
      tail[row] = i;
    } else {
      row = static_cast<uint32_t>(head.size());
      room = T;
      head.push_back(i);
      tail.push_back(i);
    }
    room -= need;
    if (room > 0) {
      if (open[static_cast<size_t>(room)].empty()) rooms.insert(room);
      open[static_cast<size_t>(room)].push_back(row);
    }
  }
  std::vector<std::vector<uint32_t>>().swap(open);
  std::vector<uint32_t>().swap(sorted);
  std::vector<uint32_t> order(head.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = static_cast<uint32_t>(r);
  seeded_shuffle(order, (o.seed * 1000003ull + static_cast<uint64_t>(epoch)) ^ 0x9e3779b97f4a7c15ull);
  starts_.reserve(order.size() + 1);
  starts_.push_back(0);
  size_t k = 0;
  for (uint32_t r : order) {
    for (uint32_t i = head[r]; i != kNone; i = next[i]) items_[k++] = i;
    starts_.push_back(k);
  }
}

double packing_fill(const ExampleSet& set, const EpochRows& rows, int64_t max_seq_len) {
  if (rows.size() == 0 || max_seq_len <= 0) return 1.0;
  int64_t used = 0;
  for (size_t r = 0; r < rows.size(); ++r) used += row_real_tokens(set, rows[r], max_seq_len);
  return static_cast<double>(used) / (static_cast<double>(rows.size()) * static_cast<double>(max_seq_len));
}

int64_t row_real_tokens(const ExampleSet& set, std::span<const uint32_t> row, int64_t max_seq_len) {
  int64_t used = 0;
  for (uint32_t i : row) used += std::min<int64_t>(set.length(i), max_seq_len - used);
  return used;
}

int64_t row_target_tokens(const ExampleSet& set, std::span<const uint32_t> row, int64_t max_seq_len) {
  int64_t used = 0, n = 0;
  for (uint32_t i : row) {
    const ExampleRef e = set[i];
    const int64_t len = std::min<int64_t>(e.size, max_seq_len - used);
    n += e.targets_within(len);
    used += len;
  }
  return n;
}

}  // namespace air::train
