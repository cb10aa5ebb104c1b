// Padded / packed batching of examples with their trained tokens (trainer/data/example.h) and a seeded,
// world-size-independent row order.
#include "trainer/batches.h"

#include <random>

#include "core/base/error.h"

namespace air::train {
namespace {

// A deterministic Fisher-Yates shuffle (std::shuffle's results differ between standard libraries).
void shuffle_indices(std::vector<uint32_t>& v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
}

}  // namespace

DataLoader::DataLoader(std::vector<Example> examples, DataOptions options)
    : examples_(std::move(examples)), o_(options) {
  if (examples_.empty()) throw Error("the dataset has no examples");
  if (o_.world_size < 1 || o_.rank < 0 || o_.rank >= o_.world_size)
    throw Error("bad rank " + std::to_string(o_.rank) + " for world size " + std::to_string(o_.world_size));
  build_epoch(0);
}

void DataLoader::build_epoch(int64_t epoch) {
  std::vector<uint32_t> order(examples_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  shuffle_indices(order, o_.seed * 1000003ull + static_cast<uint64_t>(epoch));
  rows_.clear();
  if (!o_.packing) {
    for (uint32_t i : order) rows_.push_back({i});
  } else {
    Row row;
    int64_t used = 0;
    for (uint32_t i : order) {
      const int64_t n = std::min<int64_t>(static_cast<int64_t>(examples_[i].ids.size()), o_.max_seq_len);
      if (!row.empty() && used + n > o_.max_seq_len) {
        rows_.push_back(std::move(row));
        row.clear();
        used = 0;
      }
      row.push_back(i);
      used += n;
    }
    if (!row.empty()) rows_.push_back(std::move(row));
  }
  epoch_ = epoch;
  cursor_ = 0;
}

void DataLoader::seek(Position p) {
  build_epoch(p.epoch);
  cursor_ = std::min<int64_t>(p.cursor, static_cast<int64_t>(rows_.size()));
}

int64_t DataLoader::row_targets(const Row& r) const {
  int64_t used = 0, n = 0;
  for (uint32_t i : r) {
    const Example& e = examples_[i];
    const int64_t len = std::min<int64_t>(static_cast<int64_t>(e.ids.size()), o_.max_seq_len - used);
    n += e.targets_within(len);  // position t predicts token t + 1 when that token is trained
    used += len;
  }
  return n;
}

int64_t DataLoader::row_real(const Row& r) const {
  int64_t used = 0;
  for (uint32_t i : r) used += std::min<int64_t>(static_cast<int64_t>(examples_[i].ids.size()), o_.max_seq_len - used);
  return used;
}

MicroBatch DataLoader::materialize(const std::vector<const Row*>& rows) const {
  const int64_t B = static_cast<int64_t>(rows.size()), T = o_.max_seq_len;
  MicroBatch mb;
  mb.input_ids = at::full({B, T}, o_.pad_id, at::kLong);
  mb.targets = at::full({B, T}, -100, at::kLong);
  mb.positions = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1});
  at::Tensor seg = at::zeros({B, T}, at::kInt);
  auto ids = mb.input_ids.accessor<int64_t, 2>();
  auto tgt = mb.targets.accessor<int64_t, 2>();
  auto pos = mb.positions.accessor<int64_t, 2>();
  auto sg = seg.accessor<int32_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    int64_t off = 0;
    int32_t k = 0;
    for (uint32_t i : *rows[static_cast<size_t>(b)]) {
      const Example& e = examples_[i];
      const int64_t len = std::min<int64_t>(static_cast<int64_t>(e.ids.size()), T - off);
      ++k;
      for (int64_t t = 0; t < len; ++t) {
        ids[b][off + t] = e.ids[static_cast<size_t>(t)];
        pos[b][off + t] = t;
        sg[b][off + t] = k;
        if (t + 1 < len && e.trained(static_cast<size_t>(t + 1))) tgt[b][off + t] = e.ids[static_cast<size_t>(t + 1)];
      }
      off += len;
      mb.real_tokens += len;
    }
    // Padding in a packed row gets positions from 0 again, in its own segment.
    if (o_.packing)
      for (int64_t t = off; t < T; ++t) pos[b][t] = t - off;
  }
  mb.target_tokens = mb.targets.ne(-100).sum().item<int64_t>();
  if (o_.packing) mb.segments = seg;
  return mb;
}

MicroBatch DataLoader::materialize_rows(const std::vector<int64_t>& rows) const {
  static const Row kEmpty;
  std::vector<const Row*> ptrs;
  for (int64_t r : rows) ptrs.push_back(r >= 0 && r < static_cast<int64_t>(rows_.size()) ? &rows_[static_cast<size_t>(r)] : &kEmpty);
  return materialize(ptrs);
}

StepBatch DataLoader::next() {
  StepBatch s;
  s.epoch = epoch_;
  const int64_t per_rank = o_.micro_batch_size * o_.grad_accum;
  std::vector<Row> mine;  // copies: build_epoch may replace rows_ mid-step
  for (int64_t g = 0; g < rows_per_step(); ++g) {
    if (cursor_ >= static_cast<int64_t>(rows_.size())) build_epoch(epoch_ + 1);
    const Row* r = &rows_[static_cast<size_t>(cursor_++)];
    s.global_rows += 1;
    s.global_real_tokens += row_real(*r);
    s.global_target_tokens += row_targets(*r);
    if (g / per_rank == o_.rank) mine.push_back(*r);
  }
  for (int64_t m = 0; m < o_.grad_accum; ++m) {
    std::vector<const Row*> rows;
    for (int64_t b = 0; b < o_.micro_batch_size; ++b) rows.push_back(&mine[static_cast<size_t>(m * o_.micro_batch_size + b)]);
    s.micro.push_back(materialize(rows));
  }
  return s;
}

}  // namespace air::train
