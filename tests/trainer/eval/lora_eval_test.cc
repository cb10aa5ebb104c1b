// LoRA's evaluation is a forward only (LoraEngine::forward_loss): evaluating after every step leaves the
// training run exactly as it is without those evaluations - the same losses, step for step, with adapter
// dropout on, whose masks a training pass draws from a per-micro-batch counter that an evaluation must not
// advance - and the final evaluation gives the same loss either way (dropout off, as PEFT's eval mode).
#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "trainer/config.h"
#include "trainer/trainer.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

TrainConfig lora_run(const fs::path& out, int64_t eval_every) {
  TrainConfig c;
  const std::string src = AIR_SOURCE_DIR;
  c.model_name = src + "/examples/tiny_model";
  c.dataset_name = src + "/examples/data/alpaca_tiny.json";
  c.init = "random";
  c.max_seq_len = 64;
  c.per_device_batch_size = 4;
  c.packing = true;
  c.learning_rate = 2e-2;
  c.max_steps = 4;
  c.max_examples = 40;
  c.seed = 11;
  c.log_every = 100;
  c.data_cache_dir = "off";
  c.eval_split_ratio = 0.25;
  c.eval_every_steps = eval_every;
  c.output_dir = out.string();
  c.lora.enabled = true;
  c.lora.r = 4;
  c.lora.alpha = 8;
  c.lora.dropout = 0.2;
  return c;
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

}  // namespace

TEST_CASE("lora: evaluating is a forward only - it changes nothing of the training run") {
  const fs::path dir = fs::temp_directory_path() / ("air_lora_eval_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::ostringstream log_a, log_b;
  TrainResult a = run_training(lora_run(dir / "a", 0), log_a);  // evaluated after the last step only
  TrainResult b = run_training(lora_run(dir / "b", 1), log_b);  // after every step
  REQUIRE(a.losses.size() == 4);
  REQUIRE(b.losses.size() == 4);
  REQUIRE(a.eval_losses.size() == 1);
  REQUIRE(b.eval_losses.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    INFO("step " << i + 1 << ": " << a.losses[i] << " without evaluations, " << b.losses[i] << " with");
    CHECK(close(a.losses[i], b.losses[i]));
  }
  CHECK(close(a.eval_losses.back(), b.eval_losses.back()));
  CHECK(std::isfinite(b.eval_losses.front()));
  CHECK(b.eval_losses.front() != b.eval_losses.back());  // the adapters moved between the evaluations
  fs::remove_all(dir);
}
