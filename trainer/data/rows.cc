// An epoch's rows (rows.h): the seeded order and the packing.
#include "trainer/data/rows.h"

#include <algorithm>
#include <random>

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
