// The trainer's data: the training examples and the eval set (eval_dataset, a split of dataset_name, or
// eval_split_ratio held out by seed) from trainer/data/, as loaders of micro-batches; and the evaluation.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "trainer/batches.h"
#include "trainer/config.h"
#include "trainer/data/dataset.h"

namespace air::train {

class Engine;

struct TrainData {
  std::unique_ptr<DataLoader> train;
  ExampleSet eval;            // empty: no evaluation
  DataOptions options;        // the train loader's (eval batches are cut the same way)
};

// The chat template for these settings (the tokenizer folder's, or chat_template:), or nullopt.
std::optional<ChatTemplate> load_chat_template(const TrainConfig& c, const std::string& tokenizer_dir);
DataSettings data_settings(const TrainConfig& c);
TrainData load_train_data(const TrainConfig& c, int64_t rank, int64_t world_size, const TextEncoder& enc,
                          const std::string& tokenizer_dir, std::ostream& log);

// This rank's eval micro-batches: every eval row once over all ranks, the same number of micro-batches on
// every rank (rows past the end are padding), at most `max_batches` (0: all).
std::vector<MicroBatch> eval_batches(const ExampleSet& eval, const DataOptions& o, int64_t max_batches);

struct EvalResult {
  double loss = 0;        // mean over every eval target token of every rank
  double perplexity = 0;  // exp(loss)
  int64_t tokens = 0;     // target tokens over all ranks
};
// The forward of every batch (Engine::forward_loss); the engine's gradients are left zero. Every rank calls
// it with its batches.
EvalResult evaluate(Engine& engine, const std::vector<MicroBatch>& batches, const at::Device& device);
// {"step": 10, "eval_loss": 2.1, "eval_perplexity": 8.2, "eval_tokens": 4000}
std::string eval_json_line(int64_t step, const EvalResult& r);

}  // namespace air::train
