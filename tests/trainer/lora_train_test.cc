// LoRA end to end on the tiny model (CPU): the `lora:` settings and their errors, training that moves only
// the adapters (the merged checkpoint's untargeted weights are the initial ones, bit for bit), PEFT's file
// format and key names, merging, resumption and world size 2 (real processes, as train_resume_test.cc).
#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include <ATen/Parallel.h>
#include <yaml-cpp/yaml.h>

#include "core/base/error.h"
#include "tests/trainer/reference_engine.h"
#include "tests/trainer/train_process.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/config.h"
#include "trainer/model/llama_config.h"
#include "trainer/model/model.h"
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
  c.max_seq_len = 64;
  c.per_device_batch_size = 4;
  c.gradient_accumulation_steps = 2;
  c.packing = true;
  c.learning_rate = 2e-2;
  c.max_steps = 6;
  c.max_examples = 40;
  c.seed = 7;
  c.log_every = 100;
  c.save_dtype = "fp32";
  c.output_dir = out;
  c.lora.enabled = true;
  c.lora.r = 4;
  c.lora.alpha = 8;
  return c;
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("air_lora_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string config_error(const std::string& yaml) {
  TrainConfig c;
  try {
    apply_yaml(c, yaml, "train.yaml");
    c.model_name = "m";
    c.dataset_name = "d";
    validate(c);
  } catch (const air::Error& e) {
    return std::string(e.what()) + "\nhint: " + e.hint();
  }
  return "";
}

}  // namespace

TEST_CASE("lora config: the block reads PEFT's names, bad values are located errors with hints") {
  TrainConfig c;
  apply_yaml(c, "model_name: m\nlora:\n  r: 8\n  alpha: 16\n  target_modules: [v_proj, q_proj]\n  merge: true\n",
             "train.yaml");
  REQUIRE(c.lora.enabled);
  REQUIRE(c.lora.r == 8);
  REQUIRE(c.lora.scaling() == 2.0);
  REQUIRE((c.lora.target_modules == std::vector<std::string>{"q_proj", "v_proj"}));  // canonical order
  REQUIRE(c.lora.merge);
  REQUIRE(c.origin["lora"] == "train.yaml:2");
  apply_override(c, "lora.target_modules=all-linear");
  REQUIRE(c.lora.target_modules.size() == 7);
  apply_override(c, "lora.r=32");
  REQUIRE(c.lora.r == 32);
  REQUIRE(render_config(c).find("lora ") != std::string::npos);
  TrainConfig off;
  CHECK_FALSE(off.lora.enabled);
  apply_yaml(off, "lora: {}\n", "t.yaml");  // an empty block: PEFT's defaults
  REQUIRE(off.lora.enabled);
  REQUIRE(off.lora.r == 16);
  REQUIRE(off.lora.target_modules.size() == 7);

  std::string e = config_error("lora:\n  r: 8\n  rank: 4\n");
  CHECK_THAT(e, Catch::Contains("train.yaml:3:3: error: unknown key 'lora.rank'") && Catch::Contains("lora takes: r"));
  e = config_error("lora:\n  target_modules: [q_proj, qkv_prj]\n");
  CHECK_THAT(e, Catch::Contains("train.yaml:2:28: error: lora.target_modules: 'qkv_prj' is not a block linear") &&
                    Catch::Contains("did you mean 'qkv_proj'?"));
  // Phi-3's fused modules (PEFT's names for it) read too; whether the model has them is checked with its config.
  apply_override(c, "lora.target_modules=[down_proj, gate_up_proj, qkv_proj]");
  REQUIRE((c.lora.target_modules == std::vector<std::string>{"qkv_proj", "gate_up_proj", "down_proj"}));
  e = config_error("lora:\n  alfa: 3\n");
  CHECK_THAT(e, Catch::Contains("did you mean 'alpha'?"));
  e = config_error("lora:\n  r: 0\n");
  CHECK_THAT(e, Catch::Contains("lora.r must be an integer from 1 to 4096"));
  e = config_error("lora:\n  r: eight\n");
  CHECK_THAT(e, Catch::Contains("train.yaml:2:6: error: lora.r: expected a number, got 'eight'"));
  e = config_error("lora:\n  dropout: 1.0\n");
  CHECK_THAT(e, Catch::Contains("lora.dropout must be within [0, 1)"));
  e = config_error("lora: [r, 8]\n");
  CHECK_THAT(e, Catch::Contains("lora: expected a mapping"));
  e = config_error("precision: fp8\nlora: {r: 4}\n");
  CHECK_THAT(e, Catch::Contains("lora with precision: fp8 is not supported"));
  TrainConfig s;
  REQUIRE_THROWS_WITH(apply_override(s, "lora.rr=3"), Catch::Contains("unknown key 'lora.rr'"));
}

TEST_CASE("lora config: the example workload's parameters read as a LoRA configuration") {
  const std::string path = std::string(AIR_SOURCE_DIR) + "/examples/llama31_8b_lora/train.yaml";
  YAML::Node root = YAML::LoadFile(path);
  YAML::Emitter em;
  em << root["parameters"];
  TrainConfig c;
  apply_yaml(c, em.c_str(), path);
  validate(c);
  REQUIRE(c.lora.enabled);
  REQUIRE(c.lora.r == 16);
  REQUIRE(c.lora.alpha == 32);
  REQUIRE(c.lora.target_modules.size() == 7);
  REQUIRE(c.model_name == "meta-llama/Llama-3.1-8B");
}

TEST_CASE("lora train: only the adapters move, PEFT's files and key names, merge = base + (alpha / r) B A") {
  at::set_num_threads(1);
  const fs::path dir = temp_dir("merge");
  TrainConfig c = tiny((dir / "out").string());
  c.lora.target_modules = {"q_proj", "v_proj", "down_proj"};
  c.lora.merge = true;
  std::ostringstream log;
  TrainResult r = run_training(c, log);
  INFO(log.str());
  REQUIRE(r.losses.size() == 6);
  REQUIRE(r.losses[5] < r.losses[0]);
  REQUIRE(log.str().find("lora engine: r 4") != std::string::npos);

  // Step 1 from B = 0 is the base model's loss: the full fine-tuning reference engine (autograd) agrees.
  TrainConfig full = tiny((dir / "full").string());
  full.lora = LoraConfig();
  full.max_steps = 1;
  full.save = false;
  std::ostringstream flog;
  TrainResult fr = run_training(full, flog, air::train::testing::make_reference_engine);
  REQUIRE(r.losses[0] == Approx(fr.losses[0]).epsilon(1e-5));

  // The adapter beside the merged weights, in PEFT's format.
  const fs::path out = dir / "out", ad = out / "adapter";
  REQUIRE(fs::exists(out / "config.json"));
  REQUIRE(fs::exists(ad / "adapter_config.json"));
  CHECK_FALSE(fs::exists(out / "adapter_config.json"));  // transformers would apply it on top of the merged weights
  auto cfg = nlohmann::json::parse(slurp(ad / "adapter_config.json"));
  REQUIRE(cfg["peft_type"] == "LORA");
  REQUIRE(cfg["task_type"] == "CAUSAL_LM");
  REQUIRE(cfg["r"] == 4);
  REQUIRE(cfg["lora_alpha"] == 8);
  REQUIRE(cfg["target_modules"] == nlohmann::json({"q_proj", "v_proj", "down_proj"}));
  auto af = SafetensorsFile::open((ad / "adapter_model.safetensors").string());
  LlamaConfig mc = parse_llama_config(nlohmann::json::parse(slurp(out / "config.json")), "merged");
  REQUIRE(af->entries().size() == static_cast<size_t>(mc.num_hidden_layers) * 3 * 2);
  const std::string k0 = "base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight";
  REQUIRE(af->contains(k0));
  REQUIRE((af->get(k0).sizes().vec() == std::vector<int64_t>{mc.num_key_value_heads * mc.head_dim, 4}));
  REQUIRE(af->get(k0).scalar_type() == at::kFloat);
  REQUIRE(af->get(k0).abs().max().item<double>() > 0);  // B trained away from zero
  REQUIRE(af->contains("base_model.model.model.layers.1.mlp.down_proj.lora_A.weight"));

  // The merged checkpoint: untargeted tensors are the initial ones exactly (frozen), targeted ones are
  // base + scaling * B A with the saved adapter.
  LlamaModel init(mc, at::kCPU, at::kFloat);
  init.init_random(static_cast<uint64_t>(c.seed));
  WeightSet merged = WeightSet::open_dir(out.string());
  int adapted = 0, frozen = 0;
  for (const auto& [name, t] : init.named_parameters()) {
    INFO(name);
    at::Tensor got = merged.get(name);
    const bool targeted = name.find("q_proj") != std::string::npos || name.find("v_proj") != std::string::npos ||
                          name.find("down_proj") != std::string::npos;
    if (!targeted) {
      REQUIRE(at::equal(got, t));
      ++frozen;
      continue;
    }
    const std::string stem = "base_model.model." + name.substr(0, name.size() - std::string(".weight").size());
    at::Tensor a = af->get(stem + ".lora_A.weight"), b = af->get(stem + ".lora_B.weight");
    REQUIRE(at::allclose(got, t + 2.0 * at::mm(b, a), 1e-5, 1e-6));
    CHECK_FALSE(at::equal(got, t));
    ++adapted;
  }
  REQUIRE(adapted == 3 * mc.num_hidden_layers);
  REQUIRE(frozen > adapted);
  fs::remove_all(dir);
}

TEST_CASE("lora train: without merge output_dir holds only the adapter, replaced atomically on the next run") {
  at::set_num_threads(1);
  const fs::path dir = temp_dir("adapter");
  TrainConfig c = tiny((dir / "out").string());
  c.max_steps = 2;
  std::ostringstream log;
  run_training(c, log);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "out")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  REQUIRE((files == std::vector<std::string>{"adapter_config.json", "adapter_model.safetensors"}));
  auto af = SafetensorsFile::open((dir / "out" / "adapter_model.safetensors").string());
  REQUIRE(af->entries().size() == 2u * 7u * 2u);  // 2 layers x 7 modules x (A, B)
  REQUIRE(af->contains("base_model.model.model.layers.1.mlp.gate_proj.lora_A.weight"));
  // An earlier adapter is replaced; nothing else is left beside it.
  run_training(c, log);
  for (const auto& e : fs::directory_iterator(dir)) REQUIRE(e.path().filename() == "out");
  // A folder of the user's is refused before training.
  fs::create_directories(dir / "mine");
  std::ofstream(dir / "mine" / "notes.txt") << "keep";
  c.output_dir = (dir / "mine").string();
  REQUIRE_THROWS_WITH(run_training(c, log), Catch::Contains("is not an earlier checkpoint"));
  REQUIRE(fs::exists(dir / "mine" / "notes.txt"));
  fs::remove_all(dir);
}

TEST_CASE("lora train: recomputing every block and reducing once per step follow the same curve") {
  at::set_num_threads(1);
  const fs::path dir = temp_dir("modes");
  auto run = [&](const std::string& ac, const std::string& sync) {
    TrainConfig c = tiny((dir / "out").string());
    c.max_steps = 4;
    c.save = false;
    c.activation_checkpointing = ac;
    c.grad_sync = sync;
    std::ostringstream log;
    TrainResult r = run_training(c, log);
    INFO(log.str());
    REQUIRE(r.losses.size() == 4);
    return r;
  };
  TrainResult plain = run("false", "micro_batch");
  TrainResult recomputed = run("true", "micro_batch");
  TrainResult once = run("false", "step");
  int compared = 0;
  for (size_t i = 0; i < plain.losses.size(); ++i) {
    INFO("step " << i + 1);
    REQUIRE(recomputed.losses[i] == Approx(plain.losses[i]).epsilon(1e-5));
    REQUIRE(recomputed.grad_norms[i] == Approx(plain.grad_norms[i]).epsilon(1e-4));
    REQUIRE(once.losses[i] == Approx(plain.losses[i]).epsilon(1e-5));
    REQUIRE(once.grad_norms[i] == Approx(plain.grad_norms[i]).epsilon(1e-4));
    ++compared;
  }
  REQUIRE(compared == 4);
  REQUIRE(plain.losses[3] != plain.losses[0]);
  fs::remove_all(dir);
}

TEST_CASE("lora train: the adapters folded into the base GEMMs or run beside them follow the same curve") {
  at::set_num_threads(1);
  const fs::path dir = temp_dir("fold");
  auto run = [&](const char* fold, const char* align) {
    ::setenv("AIR_TRAIN_LORA_FOLD", fold, 1);
    ::setenv("AIR_TRAIN_LORA_ALIGN", align, 1);
    TrainConfig c = tiny((dir / "out").string());
    c.max_steps = 4;
    c.save = false;
    std::ostringstream log;
    TrainResult r = run_training(c, log);
    ::unsetenv("AIR_TRAIN_LORA_FOLD");
    ::unsetenv("AIR_TRAIN_LORA_ALIGN");
    INFO(log.str());
    REQUIRE(r.losses.size() == 4);
    return r;
  };
  TrainResult folded = run("1", "1"), beside = run("0", "1"), packed_rows = run("1", "0");
  for (size_t i = 0; i < folded.losses.size(); ++i) {
    INFO("step " << i + 1);
    REQUIRE(beside.losses[i] == Approx(folded.losses[i]).epsilon(1e-5));
    REQUIRE(beside.grad_norms[i] == Approx(folded.grad_norms[i]).epsilon(1e-4));
    REQUIRE(packed_rows.losses[i] == Approx(folded.losses[i]).epsilon(1e-5));
  }
  REQUIRE(folded.losses[3] != folded.losses[0]);
  fs::remove_all(dir);
}

TEST_CASE("lora train: dropout draws the same masks when recomputing, and changes the curve") {
  at::set_num_threads(1);
  const fs::path dir = temp_dir("dropout");
  auto run = [&](double dropout, const std::string& ac) {
    TrainConfig c = tiny((dir / "out").string());
    c.max_steps = 4;
    c.save = false;
    c.lora.dropout = dropout;
    c.activation_checkpointing = ac;
    std::ostringstream log;
    TrainResult r = run_training(c, log);
    INFO(log.str());
    REQUIRE(r.losses.size() == 4);
    return r;
  };
  TrainResult plain = run(0, "false");
  TrainResult dropped = run(0.3, "false");
  TrainResult recomputed = run(0.3, "true");
  for (size_t i = 0; i < dropped.losses.size(); ++i) {
    INFO("step " << i + 1);
    REQUIRE(std::isfinite(dropped.losses[i]));
    REQUIRE(recomputed.losses[i] == Approx(dropped.losses[i]).epsilon(1e-5));
    REQUIRE(recomputed.grad_norms[i] == Approx(dropped.grad_norms[i]).epsilon(1e-4));
  }
  // Step 1: B = 0, so the output (and the loss) does not see the masks; their gradients do.
  REQUIRE(dropped.losses[0] == Approx(plain.losses[0]).epsilon(1e-6));
  REQUIRE(dropped.grad_norms[0] != Approx(plain.grad_norms[0]).epsilon(1e-4));
  REQUIRE(dropped.losses[3] != Approx(plain.losses[3]).epsilon(1e-6));
  fs::remove_all(dir);
}

namespace {

using Attempt = air::train::testing::TrainAttempt;

Attempt attempt(int world, const fs::path& out, const std::string& env = "", const std::string& extra = "") {
  const std::string src = AIR_SOURCE_DIR;
  std::string cmd = "OMP_NUM_THREADS=1 " + env + " " + air::train::testing::train_launcher(world) +
                    " --set model_name=" + src +
                    "/examples/tiny_model --set dataset_name=" + src +
                    "/examples/data/alpaca_tiny.json --set init=random --set max_seq_len=64 --set packing=true"
                    " --set per_device_batch_size=" + std::to_string(4 / world) +
                    " --set gradient_accumulation_steps=2 --set learning_rate=2e-2 --set max_steps=6"
                    " --set max_examples=40 --set seed=11 --set checkpoint_every_steps=2 --set lora.r=4"
                    " --set lora.alpha=8 --set lora.target_modules=[q_proj,k_proj,o_proj,up_proj]"
                    " --set output_dir=" + out.string() + " " + extra;
  return air::train::testing::run_train_command(cmd);
}

}  // namespace

TEST_CASE("lora train: world size 2 follows world size 1, a retried attempt resumes the same curve") {
  const fs::path root = temp_dir("world");
  Attempt one = attempt(1, root / "one");
  INFO(one.output);
  REQUIRE(one.code == 0);
  REQUIRE(one.losses.size() == 6);
  REQUIRE(one.losses[6] < one.losses[1]);
  Attempt two = attempt(2, root / "two");
  INFO(two.output);
  REQUIRE(two.code == 0);
  // lora.shard_base: auto keeps a base that fits whole on every rank (no gathers for it).
  REQUIRE(two.output.find("on every rank") != std::string::npos);
  for (int step = 1; step <= 6; ++step) {
    INFO("step " << step);
    REQUIRE(std::abs(two.losses[step] - one.losses[step]) <= 1e-4 * std::abs(one.losses[step]));
  }
  // Dies after step 3: resumes from step 2's checkpoint and continues the same curve.
  Attempt first = attempt(1, root / "retried", "AIR_TRAIN_EXIT_AFTER_STEP=3");
  REQUIRE(first.code == 3);
  Attempt second = attempt(1, root / "retried");
  INFO(second.output);
  REQUIRE(second.code == 0);
  REQUIRE(second.output.find("at step 2") != std::string::npos);
  REQUIRE(second.losses.size() == 4);
  for (int step = 3; step <= 6; ++step) {
    INFO("step " << step);
    REQUIRE(std::abs(second.losses[step] - one.losses[step]) <= 1e-4 * std::abs(one.losses[step]));
  }
  REQUIRE(fs::exists(root / "retried" / "adapter_model.safetensors"));
  REQUIRE(fs::exists(root / "retried" / "sharded" / "latest"));
  fs::remove_all(root);
}

// lora.shard_base: each of 2 ranks keeps half of every block's frozen weights and gathers a block as it
// runs (a base larger than one device): the same curve as one process with the whole base, and the merged
// checkpoint (written from the gathered blocks) holds the same weights.
TEST_CASE("lora train: a base sharded over 2 ranks follows one process and merges the same weights") {
  const fs::path root = temp_dir("shard_base");
  Attempt one = attempt(1, root / "one", "", "--set lora.merge=true --set lora.shard_base=true");
  INFO(one.output);
  REQUIRE(one.code == 0);
  REQUIRE(one.output.find("on every rank") != std::string::npos);  // one rank: nothing to shard over
  Attempt two = attempt(2, root / "two", "", "--set lora.merge=true --set lora.shard_base=true");
  INFO(two.output);
  REQUIRE(two.code == 0);
  REQUIRE(two.output.find("sharded over the ranks") != std::string::npos);
  REQUIRE(two.losses.size() == 6);
  for (int step = 1; step <= 6; ++step) {
    INFO("step " << step);
    REQUIRE(std::abs(two.losses[step] - one.losses[step]) <= 1e-4 * std::abs(one.losses[step]));
  }
  WeightSet a = WeightSet::open_dir((root / "one").string()), b = WeightSet::open_dir((root / "two").string());
  LlamaConfig mc = parse_llama_config(nlohmann::json::parse(slurp(root / "one" / "config.json")), "merged");
  LlamaModel shape(mc, at::kCPU, at::kFloat);
  int compared = 0;
  for (const auto& [name, t] : shape.named_parameters()) {
    INFO(name);
    at::Tensor x = a.get(name).to(at::kFloat), y = b.get(name).to(at::kFloat);
    REQUIRE(x.sizes() == y.sizes());
    REQUIRE(((x - y).abs().max() <= 1e-3 * x.abs().max().clamp_min(1e-6)).item<bool>());
    ++compared;
  }
  REQUIRE(compared == static_cast<int>(shape.named_parameters().size()));
  // The base itself moved nowhere: an untargeted weight is bit for bit the same on both.
  REQUIRE(at::equal(a.get("model.layers.0.self_attn.v_proj.weight"), b.get("model.layers.0.self_attn.v_proj.weight")));
  fs::remove_all(root);
}

// A bad value is a located error with the choices.
TEST_CASE("lora config: shard_base takes auto, true or false") {
  LoraConfig c;
  set_lora_yaml(c, YAML::Load("{shard_base: true}"));
  REQUIRE(c.shard_base == "true");
  set_lora_yaml(c, YAML::Load("{shard_base: auto}"));
  REQUIRE(c.shard_base == "auto");
  try {
    set_lora_yaml(c, YAML::Load("{r: 8,\n shard_base: maybe}"));
    FAIL("expected an error");
  } catch (const LoraYamlError& e) {
    REQUIRE(e.message == "lora.shard_base: 'maybe' is not one of: auto, true, false");
    REQUIRE(e.line == 1);
  }
  REQUIRE(render_lora(c).find("shard_base: auto") != std::string::npos);
}
