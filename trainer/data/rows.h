// The rows of one epoch: the examples of a set in a seeded order (the same at any world size), one per row
// (padded) or several per row (packed, up to max_seq_len tokens). Kept flat - 4 bytes per example, and 8
// per packed row - so a set of ten million examples costs tens of MB, not a vector per row. No libtorch
// (air_data); trainer/batches.h turns rows into tensors.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "trainer/data/example_set.h"

namespace air::train {

struct RowOptions {
  int64_t max_seq_len = 1024;
  bool packing = false;
  uint64_t seed = 42;
  // Packed rows: best-fit decreasing (each example, longest first, into the open row it fills most tightly;
  // rows then in seeded order) or greedy (rows filled in shuffled order, closed when the next does not fit).
  bool best_fit = true;
};

class EpochRows {
 public:
  EpochRows() = default;
  EpochRows(const ExampleSet& set, const RowOptions& o, int64_t epoch);

  size_t size() const { return starts_.empty() ? items_.size() : starts_.size() - 1; }
  // The example indices laid out in row r, in order.
  std::span<const uint32_t> operator[](size_t r) const {
    if (starts_.empty()) return {items_.data() + r, 1};
    return {items_.data() + starts_[r], static_cast<size_t>(starts_[r + 1] - starts_[r])};
  }

 private:
  void pack_best_fit(const ExampleSet& set, const RowOptions& o, int64_t epoch);

  std::vector<uint32_t> items_;   // example indices, row after row
  std::vector<uint64_t> starts_;  // packed: row r is items_[starts_[r], starts_[r + 1]); empty when padded
};

// The share of a packed epoch's positions that hold tokens (1.0 for no rows).
double packing_fill(const ExampleSet& set, const EpochRows& rows, int64_t max_seq_len);

// Tokens of a row's examples that fit max_seq_len (non-padding inputs), and its target tokens (a position
// predicts the next token when that one is trained, within the same example).
int64_t row_real_tokens(const ExampleSet& set, std::span<const uint32_t> row, int64_t max_seq_len);
int64_t row_target_tokens(const ExampleSet& set, std::span<const uint32_t> row, int64_t max_seq_len);

// A deterministic Fisher-Yates shuffle (std::shuffle's results differ between standard libraries).
void seeded_shuffle(std::vector<uint32_t>& v, uint64_t seed);

}  // namespace air::train
