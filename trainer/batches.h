// Training examples (trainer/data/: Alpaca records formatted like the reference script, conversations in the
// model's chat template, each with its trained tokens), batched padded (one example per
// row, like the reference) or packed (several per row, positions restarting per example). The row order
// is a deterministic function of the seed, and each rank reads its own disjoint rows of every step.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/data/alpaca.h"   // AlpacaRecord, read_alpaca (JSON, JSONL, Parquet)
#include "trainer/data/example.h"  // TextEncoder, Example, make_example
#include "trainer/data/rows.h"     // ExampleSet (owned or memory-mapped from the cache), EpochRows

namespace air::train {

struct DataOptions {
  int64_t max_seq_len = 1024;
  int64_t micro_batch_size = 4;  // rows per micro-batch per rank
  int64_t grad_accum = 1;
  int64_t rank = 0, world_size = 1;
  bool packing = false;
  uint64_t seed = 42;
  int32_t pad_id = 0;
  bool best_fit = true;  // packing_strategy bfd (trainer/data/rows.h)
};

// One micro-batch, on the CPU. targets are already shifted: targets[b][t] is the token position t must
// predict, or -100 (prompt, padding, across an example boundary).
struct MicroBatch {
  at::Tensor input_ids;  // int64 [B, T]
  at::Tensor targets;    // int64 [B, T]
  at::Tensor positions;  // int64 [B, T]
  at::Tensor segments;   // int32 [B, T]: example number in its row (0 = padding); undefined when not packing
  int64_t real_tokens = 0;    // non-padding input tokens
  int64_t target_tokens = 0;  // positions with a target
};

// One optimizer step's data for this rank, and the totals over every rank's rows (so the loss can be
// normalised by the global number of target tokens and the curve is the same at any world size).
struct StepBatch {
  std::vector<MicroBatch> micro;
  int64_t global_rows = 0, global_real_tokens = 0, global_target_tokens = 0;
  int64_t epoch = 0;
};

class DataLoader {
 public:
  // The examples are read in place (a mapped cache entry stays in the page cache, shared by the node's ranks).
  DataLoader(ExampleSet examples, DataOptions options);
  DataLoader(const std::vector<Example>& examples, DataOptions options) : DataLoader(ExampleSet(examples), options) {}
  StepBatch next();
  int64_t rows_per_epoch() const { return static_cast<int64_t>(rows_.size()); }
  // The share of this epoch's row positions that hold tokens (packing_fill; 1 pass over the rows).
  double fill() const { return packing_fill(examples_, rows_, o_.max_seq_len); }
  int64_t rows_per_step() const { return o_.world_size * o_.micro_batch_size * o_.grad_accum; }

  // Where the next step starts (for resumable checkpoints).
  struct Position {
    int64_t epoch = 0, cursor = 0;
  };
  Position position() const { return {epoch_, cursor_}; }
  void seek(Position p);

  // A micro-batch of rows of the current epoch by index; an index past the end is a row of padding (eval).
  MicroBatch materialize_rows(const std::vector<int64_t>& rows) const;

 private:
  using Row = std::span<const uint32_t>;  // example indices laid out in the row
  void build_epoch(int64_t epoch);
  MicroBatch materialize(const std::vector<Row>& rows) const;

  ExampleSet examples_;
  DataOptions o_;
  EpochRows rows_;
  int64_t epoch_ = 0, cursor_ = 0;
};

}  // namespace air::train
