// air-train end to end on CPU: the tiny model (2 layers, hidden 64) with our own tokenizer trains on the
// example Alpaca file; the loss falls, follows the golden curve, and the checkpoint loads back.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "trainer/model/llama_config.h"
#include "trainer/model/model.h"
#include "tests/trainer/reference_engine.h"
#include "trainer/trainer.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

TrainConfig tiny(const std::string& out) {
  TrainConfig c;
  const std::string src = AIR_SOURCE_DIR;
  c.model_name = src + "/examples/tiny_model";
  c.dataset_name = src + "/examples/data/alpaca_tiny.json";
  c.init = "random";
  c.max_seq_len = 128;
  c.per_device_batch_size = 4;
  c.gradient_accumulation_steps = 1;
  c.packing = true;
  c.packing_strategy = "greedy";  // the golden curve (golden/tiny_loss.txt) was recorded with greedy rows
  c.learning_rate = 2e-2;
  c.warmup_steps = 3;
  c.lr_schedule = "cosine";
  c.max_steps = 30;
  c.log_every = 10;
  c.output_dir = out;
  return c;
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("air_train_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

}  // namespace

TEST_CASE("train: the tiny model learns the example data and matches the golden loss curve") {
  at::set_num_threads(1);  // the golden curve is recorded single-threaded: reductions then sum in one order
  fs::path dir = temp_dir("golden");
  std::ostringstream log;
  TrainConfig c = tiny((dir / "ckpt").string());
  fs::create_directories(dir);
  c.metrics_file = (dir / "metrics.jsonl").string();
  TrainResult r = run_training(c, log);
  INFO(log.str());
  REQUIRE(r.losses.size() == 30);
  REQUIRE(r.losses[29] < 0.8 * r.losses[0]);
  REQUIRE(log.str().find("configuration:\n") == 0);
  // The log says each logged step once (log_every 10: steps 1, 10, 20, 30), as its readable line; the JSON
  // lines, with the unrounded figures, go to metrics_file.
  std::vector<std::string> step_lines;
  std::istringstream lines(log.str());
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.find("{\"step\"") == std::string::npos);
    if (line.rfind("step ", 0) == 0) step_lines.push_back(line.substr(0, line.find(" | ")));
  }
  CHECK(step_lines == std::vector<std::string>{"step 1/30", "step 10/30", "step 20/30", "step 30/30"});
  std::ifstream metrics(c.metrics_file);
  std::vector<std::pair<int64_t, double>> logged;
  for (std::string line; std::getline(metrics, line);) {
    auto j = nlohmann::json::parse(line);
    logged.emplace_back(j.at("step").get<int64_t>(), j.at("loss").get<double>());
    CHECK(j.contains("tokens_per_s_padded"));
  }
  REQUIRE(logged.size() == 4);
  for (auto [step, loss] : logged) CHECK(loss == r.losses[static_cast<size_t>(step - 1)]);

  const fs::path golden = fs::path(AIR_SOURCE_DIR) / "tests/trainer/golden/tiny_loss.txt";
  if (std::getenv("AIR_UPDATE_GOLDEN")) {
    fs::create_directories(golden.parent_path());
    std::ofstream out(golden);
    out << "# tiny model, tests/trainer/train_run_test.cc; loss per step (regenerate: AIR_UPDATE_GOLDEN=1)\n";
    out.precision(8);
    for (double l : r.losses) out << l << "\n";
  }
  std::ifstream in(golden);
  REQUIRE(in.good());
  std::vector<double> want;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') want.push_back(std::stod(line));
  REQUIRE(want.size() == r.losses.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("step " << i + 1);
    REQUIRE(r.losses[i] == Approx(want[i]).epsilon(2e-3));
  }

  // The checkpoint is complete and loads back into the same architecture.
  const fs::path ckpt = dir / "ckpt";
  REQUIRE(fs::exists(ckpt / "config.json"));
  REQUIRE(fs::exists(ckpt / "model.safetensors"));
  REQUIRE(fs::exists(ckpt / "tokenizer.json"));
  REQUIRE(fs::exists(ckpt / "generation_config.json"));
  LlamaModel back(load_llama_config((ckpt / "config.json").string()), at::kCPU, at::kFloat);
  REQUIRE_NOTHROW(back.load_pretrained(ckpt.string()));
  fs::remove_all(dir);
}

TEST_CASE("train: padded rows (the reference's batching) train too, without recomputation") {
  at::set_num_threads(1);
  fs::path dir = temp_dir("padded");
  TrainConfig c = tiny((dir / "ckpt").string());
  c.packing = false;
  c.activation_checkpointing = "false";
  c.max_steps = 8;
  c.save = false;
  c.metrics_file = "-";  // the JSON lines into the log itself, each after its step's readable line
  std::ostringstream log;
  TrainResult r = run_training(c, log);
  INFO(log.str());
  REQUIRE(r.losses.back() < 0.95 * r.losses.front());
  REQUIRE(log.str().find("(padded to 128)") != std::string::npos);
  for (int step : {1, 8}) {  // log_every 10: the first and the last step
    const std::string readable = "\nstep " + std::to_string(step) + "/8 | ";
    const size_t at = log.str().find(readable);
    REQUIRE(at != std::string::npos);
    const size_t next = log.str().find('\n', at + 1);
    const std::string json = "{\"step\":" + std::to_string(step) + ",";
    CHECK(log.str().compare(next + 1, json.size(), json) == 0);
  }
  REQUIRE(r.checkpoint_dir.empty());
  REQUIRE_FALSE(fs::exists(dir / "ckpt"));
}

TEST_CASE("train: the engine's hand-written backward follows the autograd reference engine step for step") {
  at::set_num_threads(1);
  // Accumulation 2: the step's first micro-batch writes the linears' gradients (zero_grad leaves them), the
  // second adds; a stale gradient from the step before, or a second write, would change the curve.
  for (int accum : {1, 2}) {
    INFO("gradient accumulation " << accum);
    std::vector<double> losses[2], norms[2];
    for (int e = 0; e < 2; ++e) {
      fs::path dir = temp_dir(e ? "ref_engine" : "engine");
      TrainConfig c = tiny((dir / "ckpt").string());
      c.activation_checkpointing = "false";
      c.gradient_accumulation_steps = accum;
      c.max_steps = 6;
      c.save = false;
      std::ostringstream log;
      TrainResult r = e ? run_training(c, log, air::train::testing::make_reference_engine) : run_training(c, log);
      INFO(log.str());
      REQUIRE(log.str().find(e ? "engine: reference engine" : "engine: fsdp engine") != std::string::npos);
      losses[e] = r.losses;
      norms[e] = r.grad_norms;
    }
    for (size_t i = 0; i < losses[0].size(); ++i) {
      INFO("step " << i + 1);
      REQUIRE(losses[0][i] == Approx(losses[1][i]).epsilon(1e-4));
      REQUIRE(norms[0][i] == Approx(norms[1][i]).epsilon(1e-3));
    }
  }
}

// AIR_TRAIN_WORLD1_NCCL=1 makes the engine gather, prefetch, release and reduce-scatter at world 1 as at
// world N (on CPU through the single-process group's copies): the same curve. AIR_TRAIN_DUMP_BATCHES writes
// every micro-batch in the documented layout (bench/loss_curve.py reads it).
TEST_CASE("train: world-1 collectives change nothing, the batch dump holds every micro-batch") {
  at::set_num_threads(1);
  std::vector<double> losses[2], norms[2];
  fs::path dump = temp_dir("dump");
  for (int e = 0; e < 2; ++e) {
    fs::path dir = temp_dir(e ? "world1_collectives" : "world1_plain");
    TrainConfig c = tiny((dir / "ckpt").string());
    c.master_dtype = "fp32";
    c.gradient_accumulation_steps = 2;
    c.max_steps = 4;
    c.save = false;
    if (e) {
      setenv("AIR_TRAIN_WORLD1_NCCL", "1", 1);
      setenv("AIR_TRAIN_DUMP_BATCHES", dump.c_str(), 1);
    }
    std::ostringstream log;
    TrainResult r = run_training(c, log);
    unsetenv("AIR_TRAIN_WORLD1_NCCL");
    unsetenv("AIR_TRAIN_DUMP_BATCHES");
    INFO(log.str());
    REQUIRE(log.str().find("engine: fsdp engine") != std::string::npos);
    REQUIRE((log.str().find("gathers and reduce-scatters run at world 1") != std::string::npos) == (e == 1));
    losses[e] = r.losses;
    norms[e] = r.grad_norms;
  }
  REQUIRE(losses[0].size() == 4);
  for (size_t i = 0; i < losses[0].size(); ++i) {
    INFO("step " << i + 1);
    REQUIRE(losses[0][i] == Approx(losses[1][i]).epsilon(1e-6));
    REQUIRE(norms[0][i] == Approx(norms[1][i]).epsilon(1e-5));
  }
  // 4 steps x 2 micro-batches, each [step, B, T] + ids + targets as int64.
  REQUIRE(fs::exists(dump));
  std::vector<int64_t> raw(fs::file_size(dump) / 8);
  std::ifstream again(dump, std::ios::binary);
  again.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size() * 8));
  size_t at = 0, micro = 0;
  while (at < raw.size()) {
    REQUIRE(raw[at] == static_cast<int64_t>(micro / 2 + 1));
    const int64_t b = raw[at + 1], t = raw[at + 2];
    REQUIRE(b == 4);
    REQUIRE(t == 128);
    bool some_target = false;
    for (int64_t k = 0; k < b * t; ++k) {
      const int64_t id = raw[at + 3 + k], tg = raw[at + 3 + b * t + k];
      REQUIRE(id >= 0);
      REQUIRE((tg == -100 || tg >= 0));
      some_target = some_target || tg >= 0;
    }
    REQUIRE(some_target);
    at += 3 + 2 * static_cast<size_t>(b * t);
    ++micro;
  }
  REQUIRE(at == raw.size());
  REQUIRE(micro == 8);
  fs::remove(dump);
}

TEST_CASE("train: a missing model or dataset is a clear error before any work") {
  fs::path dir = temp_dir("missing");
  TrainConfig c = tiny((dir / "ckpt").string());
  c.model_name = "meta-llama/Not-A-Model";
  setenv("HF_HOME", (dir / "hf").c_str(), 1);
  setenv("HF_HUB_OFFLINE", "1", 1);  // a hub name not in the cache would be downloaded otherwise
  std::ostringstream log;
  REQUIRE_THROWS_WITH(run_training(c, log), Catch::Contains("model meta-llama/Not-A-Model@main is not in the hub cache") &&
                                                Catch::Contains("models--meta-llama--Not-A-Model"));
  c = tiny((dir / "ckpt").string());
  c.dataset_name = (dir / "nope.jsonl").string();
  REQUIRE_THROWS_WITH(run_training(c, log), Catch::Contains("nope.jsonl not found"));
  c = tiny((dir / "ckpt").string());
  c.init = "pretrained";
  REQUIRE_THROWS_WITH(run_training(c, log), Catch::Contains("has no model.safetensors"));
  c = tiny((dir / "ckpt").string());
  c.metrics_file = (dir / "no-such-folder" / "metrics.jsonl").string();
  REQUIRE_THROWS_WITH(run_training(c, log), Catch::Contains("metrics_file: cannot open") &&
                                                Catch::Contains("no-such-folder/metrics.jsonl"));
  REQUIRE_FALSE(fs::exists(dir / "ckpt"));
  unsetenv("HF_HOME");
  unsetenv("HF_HUB_OFFLINE");
}

// precision: fp8 through the whole engine on CPU (the emulation): the weights' FP8 copies made once per
// step, the first micro-batch writing the weight gradients and the second adding to them, the saved FP8
// operands; the curve stays near the plain one and the loss still falls.
TEST_CASE("train: precision fp8 (emulated on CPU) follows the plain curve closely") {
  at::set_num_threads(1);
  std::vector<double> losses[2], norms[2];
  for (int e = 0; e < 2; ++e) {
    fs::path dir = temp_dir(e ? "fp8" : "fp8_plain");
    TrainConfig c = tiny((dir / "ckpt").string());
    c.precision = e ? "fp8" : "bf16";
    c.gradient_accumulation_steps = 2;
    c.activation_checkpointing = "false";
    c.max_steps = 6;
    c.save = false;
    std::ostringstream log;
    TrainResult r = run_training(c, log);
    INFO(log.str());
    REQUIRE((log.str().find("block GEMMs fp8 e4m3 tensorwise (emulated)") != std::string::npos) == (e == 1));
    losses[e] = r.losses;
    norms[e] = r.grad_norms;
  }
  REQUIRE(losses[1].back() < 0.95 * losses[1].front());
  bool differs = false;
  for (size_t i = 0; i < losses[0].size(); ++i) {
    INFO("step " << i + 1 << ": plain " << losses[0][i] << ", fp8 " << losses[1][i]);
    REQUIRE(losses[1][i] == Approx(losses[0][i]).epsilon(0.02));
    REQUIRE(norms[1][i] == Approx(norms[0][i]).epsilon(0.1));
    differs = differs || losses[1][i] != losses[0][i];
  }
  REQUIRE(differs);  // the FP8 path ran: not the plain GEMMs under another name
}
