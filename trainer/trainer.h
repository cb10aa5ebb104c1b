// air-train's top level: read the configuration, build tokenizer, data, model and engine, run the loop,
// save the checkpoint. train_main() is the whole program; run_training() is the same loop for tests.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "trainer/config.h"

namespace air::train {

struct TrainResult {
  std::vector<double> losses;      // per step (every step, whatever log_every says)
  std::vector<double> grad_norms;  // per step, before clipping
  std::vector<double> eval_losses; // per evaluation (eval_every_steps and the last step), when there is eval data
  std::string checkpoint_dir;      // "" when not saved
  int64_t first_step = 1;          // > 1 when the run resumed from a sharded checkpoint
};

class Engine;
struct EngineSetup;
// Builds the engine the loop drives; the product's is make_fsdp_engine (trainer/parallel/engine.h), the
// tests also pass an autograd reference engine.
using EngineFactory = std::function<std::unique_ptr<Engine>(const EngineSetup&)>;

// Runs a whole training job in this process. Output (configuration, step lines) goes to `out` on rank 0
// and on the first rank of every other node (LOCAL_RANK 0), so each node's log shows the global loss.
TrainResult run_training(TrainConfig config, std::ostream& out, const EngineFactory& make_engine = {});

struct TextEncoder;
// The tokenizer at `tokenizer_path` with BOS / EOS / PAD from tokenizer_config.json, the tokenizer or the
// model's config.json (no weights read): what --preview-data needs.
TextEncoder load_text_encoder(const std::string& tokenizer_path, const std::string& model_dir, std::ostream& log);

// Parses arguments (--config FILE, --set key=value, --print-config, --preview-data N [-o json], --help) and the environment
// (HYPERPARAMETERS_PATH, RANK, WORLD_SIZE, LOCAL_RANK); returns the exit code. Errors print as
// `air-train: error: ...` with a hint line.
int train_main(int argc, char** argv);

}  // namespace air::train
