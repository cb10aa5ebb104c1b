// Padded / packed batching of examples with their trained tokens (trainer/data/example.h) and a seeded,
// world-size-independent row order (trainer/data/rows.h).
#include "trainer/batches.h"

#include "core/base/error.h"

namespace air::train {

DataLoader::DataLoader(ExampleSet examples, DataOptions options) : examples_(std::move(examples)), o_(options) {
  if (examples_.empty()) throw Error("the dataset has no examples");
  if (o_.world_size < 1 || o_.rank < 0 || o_.rank >= o_.world_size)
    throw Error("bad rank " + std::to_string(o_.rank) + " for world size " + std::to_string(o_.world_size));
  build_epoch(0);
}

void DataLoader::build_epoch(int64_t epoch) {
  rows_ = EpochRows(examples_, RowOptions{o_.max_seq_len, o_.packing, o_.seed, o_.best_fit}, epoch);
  epoch_ = epoch;
  cursor_ = 0;
}

void DataLoader::seek(Position p) {
  build_epoch(p.epoch);
  cursor_ = std::min<int64_t>(p.cursor, static_cast<int64_t>(rows_.size()));
}

MicroBatch DataLoader::materialize(const std::vector<Row>& rows) const {
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
    for (uint32_t i : rows[static_cast<size_t>(b)]) {
      const ExampleRef e = examples_[i];
      const int64_t len = std::min<int64_t>(e.size, T - off);
      ++k;
      for (int64_t t = 0; t < len; ++t) {
        ids[b][off + t] = e.ids[t];
        pos[b][off + t] = t;
        sg[b][off + t] = k;
        if (t + 1 < len && e.trained(t + 1)) tgt[b][off + t] = e.ids[t + 1];
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
  std::vector<Row> picked;
  for (int64_t r : rows) picked.push_back(r >= 0 && r < static_cast<int64_t>(rows_.size()) ? rows_[static_cast<size_t>(r)] : Row{});
  return materialize(picked);
}

StepBatch DataLoader::next() {
  StepBatch s;
  s.epoch = epoch_;
  const int64_t per_rank = o_.micro_batch_size * o_.grad_accum;
  std::vector<std::vector<uint32_t>> mine;  // copies: build_epoch may replace rows_ mid-step
  for (int64_t g = 0; g < rows_per_step(); ++g) {
    if (cursor_ >= static_cast<int64_t>(rows_.size())) build_epoch(epoch_ + 1);
    const Row r = rows_[static_cast<size_t>(cursor_++)];
    s.global_rows += 1;
    s.global_real_tokens += row_real_tokens(examples_, r, o_.max_seq_len);
    s.global_target_tokens += row_target_tokens(examples_, r, o_.max_seq_len);
    if (g / per_rank == o_.rank) mine.emplace_back(r.begin(), r.end());
  }
  for (int64_t m = 0; m < o_.grad_accum; ++m) {
    std::vector<Row> rows;
    for (int64_t b = 0; b < o_.micro_batch_size; ++b) rows.push_back(mine[static_cast<size_t>(m * o_.micro_batch_size + b)]);
    s.micro.push_back(materialize(rows));
  }
  return s;
}

}  // namespace air::train
