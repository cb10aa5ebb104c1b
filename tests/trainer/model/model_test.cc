// The Llama model: shapes, causality, RoPE llama3 frequencies, packed rows equal separate rows,
// recomputation equals plain backward, save -> load gives identical logits, masked positions don't count.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <cmath>
#include <filesystem>
#include <fstream>

#include <torch/csrc/autograd/autograd.h>

#include "tests/trainer/model/test_util.h"
#include "trainer/checkpoint/hf_checkpoint.h"
#include "trainer/model/model.h"
#include "trainer/checkpoint/safetensors.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

LlamaModel random_model(bool tied = true, uint64_t seed = 1) {
  LlamaModel m(testing::tiny_config(tied), at::kCPU, at::kFloat);
  m.init_random(seed);
  return m;
}

at::Tensor logits_of(const LlamaModel& m, const at::Tensor& ids, bool recompute = false) {
  Rope rope(m.config(), at::kCPU);
  const int64_t B = ids.size(0), T = ids.size(1);
  at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1});
  return forward_logits(m, rope, ids, pos, {}, at::kFloat, recompute);
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("air_model_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("model: parameter names and count match transformers' LlamaForCausalLM") {
  auto untied = random_model(false);
  auto names = untied.named_parameters();
  REQUIRE(names.front().first == "model.embed_tokens.weight");
  REQUIRE(names[2].first == "model.layers.0.self_attn.q_proj.weight");
  REQUIRE(names[9].first == "model.layers.0.mlp.down_proj.weight");
  REQUIRE(names.back().first == "lm_head.weight");
  int64_t n = 0;
  for (auto& [k, t] : names) n += t.numel();
  REQUIRE(n == untied.config().num_parameters());
  auto tied = random_model(true);
  REQUIRE(tied.named_parameters().back().first == "model.norm.weight");
}

TEST_CASE("model: the forward is causal and has the right shape") {
  auto m = random_model();
  at::Tensor ids = at::randint(3, 250, {2, 12}, at::kLong);
  at::Tensor a = logits_of(m, ids);
  REQUIRE(a.sizes() == at::IntArrayRef({2, 12, 300}));
  at::Tensor changed = ids.clone();
  changed.select(1, 8).fill_(7);
  at::Tensor b = logits_of(m, changed);
  REQUIRE(at::allclose(a.narrow(1, 0, 8), b.narrow(1, 0, 8)));
  REQUIRE_FALSE(at::allclose(a.narrow(1, 8, 4), b.narrow(1, 8, 4)));
}

TEST_CASE("model: llama3 RoPE frequencies follow the published formula") {
  auto c = testing::tiny_config();
  Rope rope(c, at::kCPU);
  const auto inv = rope.inv_freq();
  const int64_t dim = c.head_dim;
  const double old_ctx = 64, low = old_ctx / 1.0, high = old_ctx / 4.0;
  for (int64_t i = 0; i < dim / 2; ++i) {
    double f = 1.0 / std::pow(500000.0, 2.0 * i / dim), w = 2 * M_PI / f, expect = f;
    if (w > low) expect = f / 8.0;
    else if (w >= high) {
      double s = (old_ctx / w - 1.0) / 3.0;
      expect = (1 - s) * f / 8.0 + s * f;
    }
    REQUIRE(inv[i].item<double>() == Approx(expect).epsilon(1e-5));
  }
}

TEST_CASE("model: two examples packed in one row give the same logits as each alone") {
  auto m = random_model();
  Rope rope(m.config(), at::kCPU);
  at::Tensor a = at::randint(3, 250, {1, 5}, at::kLong), b = at::randint(3, 250, {1, 7}, at::kLong);
  at::Tensor packed = at::cat({a, b}, 1);
  at::Tensor pos = at::cat({at::arange(5, at::kLong), at::arange(7, at::kLong)}).unsqueeze(0);
  at::Tensor seg = at::cat({at::ones({5}, at::kInt), at::full({7}, 2, at::kInt)}).unsqueeze(0);
  at::Tensor lp = forward_logits(m, rope, packed, pos, seg, at::kFloat, false);
  REQUIRE(at::allclose(lp.narrow(1, 0, 5), logits_of(m, a), 1e-5, 1e-5));
  REQUIRE(at::allclose(lp.narrow(1, 5, 7), logits_of(m, b), 1e-5, 1e-5));
}

TEST_CASE("model: activation recomputation gives the same loss and gradients") {
  auto m = random_model();
  m.set_requires_grad(true);
  at::Tensor ids = at::randint(3, 250, {2, 10}, at::kLong);
  at::Tensor tgt = at::randint(3, 250, {2, 10}, at::kLong);
  std::vector<at::Tensor> grads[2];
  double losses[2];
  for (int r = 0; r < 2; ++r) {
    at::Tensor loss = loss_sum(logits_of(m, ids, r == 1), tgt);
    loss.backward();
    losses[r] = loss.item<double>();
    for (auto& p : m.parameters()) {
      grads[r].push_back(p.grad().clone());
      p.mutable_grad().reset();
    }
  }
  REQUIRE(losses[0] == Approx(losses[1]).epsilon(1e-6));
  for (size_t i = 0; i < grads[0].size(); ++i) REQUIRE(at::allclose(grads[0][i], grads[1][i], 1e-5, 1e-6));
}

TEST_CASE("model: save -> load gives identical logits (tied and untied)") {
  for (bool tied : {true, false}) {
    auto m = random_model(tied, 7);
    fs::path dir = temp_dir(tied ? "tied" : "untied");
    SaveOptions o;
    o.output_dir = (dir / "ckpt").string();
    o.dtype = at::kFloat;
    o.max_shard_bytes = 60000;  // forces several shards and an index
    save_checkpoint(m, o);
    REQUIRE(fs::exists(dir / "ckpt" / "model.safetensors.index.json"));
    REQUIRE(fs::exists(dir / "ckpt" / "config.json"));
    REQUIRE(fs::exists(dir / "ckpt" / "generation_config.json"));
    LlamaModel back(load_llama_config((dir / "ckpt" / "config.json").string()), at::kCPU, at::kFloat);
    back.load_pretrained((dir / "ckpt").string());
    at::Tensor ids = at::randint(3, 250, {2, 9}, at::kLong);
    REQUIRE(at::equal(logits_of(m, ids), logits_of(back, ids)));
    fs::remove_all(dir);
  }
}

TEST_CASE("model: saving never leaves a half-written checkpoint and keeps the user's files") {
  auto m = random_model();
  fs::path dir = temp_dir("atomic");
  fs::create_directories(dir / "mine");
  { std::ofstream(dir / "mine" / "notes.txt") << "precious"; }
  SaveOptions o;
  o.output_dir = (dir / "mine").string();
  REQUIRE_THROWS_WITH(save_checkpoint(m, o), Catch::Contains("is not an earlier checkpoint"));
  REQUIRE(fs::exists(dir / "mine" / "notes.txt"));
  {
    SaveOptions ok;
    ok.output_dir = (dir / "ckpt").string();
    CheckpointSaver saver(m.config(), ok);
    saver.write("model.embed_tokens.weight", m.root().embed_tokens);
    // Destroyed without commit (as when training crashes mid-save): nothing appears at output_dir.
  }
  REQUIRE_FALSE(fs::exists(dir / "ckpt"));
  for (auto& e : fs::directory_iterator(dir)) REQUIRE(e.path().filename().string().find(".tmp-") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("model: loading names the file and tensor that is missing or misshapen") {
  auto m = random_model(false, 3);
  fs::path dir = temp_dir("bad");
  auto params = m.named_parameters();
  params.erase(params.begin() + 4);  // model.layers.0.self_attn.v_proj.weight
  write_safetensors((dir / "model.safetensors").string(), params);
  LlamaModel back(testing::tiny_config(false), at::kCPU, at::kFloat);
  REQUIRE_THROWS_WITH(back.load_pretrained(dir.string()), Catch::Contains("model.layers.0.self_attn.v_proj.weight"));
  params = m.named_parameters();
  params[1].second = at::zeros({5});
  write_safetensors((dir / "model.safetensors").string(), params);
  REQUIRE_THROWS_WITH(back.load_pretrained(dir.string()),
                      Catch::Contains("model.safetensors: tensor 'model.layers.0.input_layernorm.weight' has shape [5]"));
  fs::remove_all(dir);
}

TEST_CASE("model: padding and prompt positions contribute nothing to the loss or gradients") {
  auto m = random_model();
  m.set_requires_grad(true);
  at::Tensor ids = at::randint(3, 250, {1, 16}, at::kLong);
  at::Tensor tgt = at::full({1, 16}, -100, at::kLong);
  tgt.narrow(1, 4, 6).copy_(ids.narrow(1, 5, 6));  // response tokens 5..10; 11.. is padding
  auto run = [&](const at::Tensor& in) {
    at::Tensor loss = loss_sum(logits_of(m, in), tgt);
    loss.backward();
    std::vector<at::Tensor> g;
    for (auto& p : m.parameters()) {
      g.push_back(p.grad().clone());
      p.mutable_grad().reset();
    }
    return std::make_pair(loss.item<double>(), g);
  };
  auto base = run(ids);
  at::Tensor other = ids.clone();
  other.narrow(1, 11, 5).copy_(at::randint(3, 250, {1, 5}, at::kLong));  // different padding content
  auto changed = run(other);
  REQUIRE(base.first == changed.first);
  for (size_t i = 0; i < base.second.size(); ++i) REQUIRE(at::equal(base.second[i], changed.second[i]));
}
