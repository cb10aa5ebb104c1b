// Each supported family against transformers: tiny checkpoints saved by transformers with its fp32 CPU
// logits, loss and every parameter's gradient on a fixed input (tests/trainer/families/<name>/, made by
// scripts/gpu/make_family_fixtures.py). Our hand-written block (what both engines run) must give the same
// within 1e-4 relative; a checkpoint we write has the family's Hugging Face layout and loads back with equal
// logits; the LoRA block (Phi-3: on its fused qkv_proj and gate_up_proj) computes the block with merged weights.
// AIR_FAMILIES_EXPORT=DIR: also writes each family's checkpoint as we save it, with our logits
// (DIR/<name>/expected.safetensors), for `make_family_fixtures.py --check` in transformers.
#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's

#include <ATen/CPUGeneratorImpl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <yaml-cpp/yaml.h>

#include "core/base/error.h"
#include "trainer/checkpoint/hf_checkpoint.h"
#include "trainer/config.h"
#include "trainer/parallel/engine.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/lora_config.h"
#include "trainer/model/block.h"
#include "trainer/model/fp8_linear.h"
#include "trainer/model/lora_block.h"
#include "trainer/model/model.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

const char* const kFamilies[] = {"llama", "mistral", "qwen2", "qwen2_tied", "qwen3", "gemma3", "phi3", "phi3_longrope"};

std::string fixture_dir(const std::string& name) { return std::string(AIR_TEST_DATA_DIR) + "/trainer/families/" + name; }

// max |got - want| <= tol * max |want| (the tensor's scale), with the numbers in the message.
void check_rel(const at::Tensor& got, const at::Tensor& want, double tol, const std::string& what) {
  REQUIRE(got.sizes() == want.sizes());
  const double diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
  const double scale = std::max(want.abs().max().item<double>(), 1e-12);
  INFO(what << ": max |diff| " << diff << ", max |want| " << scale << ", relative " << diff / scale);
  REQUIRE(diff <= tol * scale);
}

// A family's model on the CPU in fp32 and the flat block buffers (what an FSDP unit holds).
struct Run {
  ModelConfig c;
  LlamaModel m;
  std::vector<at::Tensor> flats, grads;
  explicit Run(const std::string& dir) : c(load_model_config(dir + "/config.json")), m(c, at::kCPU, at::kFloat) {
    m.load_pretrained(dir);
    for (const auto& b : m.blocks()) {
      std::vector<at::Tensor> parts;
      for (const auto& t : b.list()) parts.push_back(t.reshape(-1));
      flats.push_back(at::cat(parts));
      REQUIRE(flats.back().numel() == block_numel(c));
      grads.push_back(at::zeros_like(flats.back()));
    }
  }
  at::Tensor head_w() const { return m.root().output_weight(); }
  AttnPlans plans(int64_t B, int64_t T) const {
    at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1});
    return make_attn_plans(c, Rope(c, at::kCPU), pos, at::Tensor(), at::kFloat, at::kCPU);
  }
  // Logits [B * T, V] through embed_fwd, block_fwd and head_logits.
  at::Tensor logits(const at::Tensor& ids) const {
    const int64_t B = ids.size(0), T = ids.size(1);
    const AttnPlans ps = plans(B, T);
    at::Tensor h = embed_fwd(c, m.root().embed_tokens, ids.reshape(-1));
    for (size_t l = 0; l < flats.size(); ++l)
      h = block_fwd(c, block_view(c, flats[l]), h, ps.layer(c, static_cast<int64_t>(l)), nullptr);
    return head_logits(c, h, m.root().norm, head_w());
  }
};

}  // namespace

namespace {

// Tiny configs of every family, built here (independent of the fixtures): each option on.
std::vector<std::pair<std::string, nlohmann::json>> tiny_family_configs() {
  nlohmann::json base = {{"vocab_size", 40},         {"hidden_size", 16},       {"intermediate_size", 24},
                         {"num_hidden_layers", 2},   {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                         {"rms_norm_eps", 1e-6},     {"max_position_embeddings", 64}};
  std::vector<std::pair<std::string, nlohmann::json>> out;
  auto add = [&](const char* name, nlohmann::json extra) {
    nlohmann::json j = base;
    j.update(extra);
    out.emplace_back(name, j);
  };
  add("mistral", {{"model_type", "mistral"}, {"head_dim", 6}, {"sliding_window", 3}});
  add("qwen2", {{"model_type", "qwen2"}, {"tie_word_embeddings", true}});
  add("qwen3", {{"model_type", "qwen3"}, {"head_dim", 6}});
  add("gemma3_text", {{"model_type", "gemma3_text"}, {"head_dim", 6}, {"sliding_window", 3}, {"query_pre_attn_scalar", 5},
                      {"final_logit_softcapping", 0.7}, {"layer_types", {"sliding_attention", "full_attention"}}});
  add("phi3", {{"model_type", "phi3"}, {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"partial_rotary_factor", 0.5}, {"original_max_position_embeddings", 4},
               {"rope_scaling", {{"type", "longrope"}, {"short_factor", {1.0, 2.0}}, {"long_factor", {3.0, 5.0}}}}});
  return out;
}

}  // namespace

// The fixtures (tests/trainer/families/<family>/) were made by scripts/gpu/make_family_fixtures.py with
// transformers 5.17 / torch 2.11 on the GPU machine (versions.json beside them).
TEST_CASE("families: our fp32 logits, loss and every gradient equal transformers' (1e-4 relative)", "[fixtures]") {
  at::NoGradGuard no_grad;
  for (const char* name : kFamilies) {
    DYNAMIC_SECTION(name) {
      const std::string dir = fixture_dir(name);
      INFO("fixture " << dir);
      REQUIRE(fs::exists(dir + "/reference.safetensors"));
      auto ref = SafetensorsFile::open(dir + "/reference.safetensors");
      Run r(dir);
      const ModelConfig& c = r.c;
      const at::Tensor ids = ref->get("input_ids"), targets = ref->get("targets");
      const int64_t B = ids.size(0), T = ids.size(1), N = B * T;
      check_rel(r.logits(ids), ref->get("logits").reshape({N, -1}), 1e-4, std::string(name) + " logits");

      // Forward with activations kept, the chunked head (7 rows a chunk: several chunks and a short one),
      // then the blocks' backward and the embeddings'.
      const AttnPlans ps = r.plans(B, T);
      at::Tensor h = embed_fwd(c, r.m.root().embed_tokens, ids.reshape(-1));
      std::vector<at::Tensor> inputs;
      std::vector<BlockSaved> saved(r.flats.size());
      for (size_t l = 0; l < r.flats.size(); ++l) {
        inputs.push_back(h);
        h = block_fwd(c, block_view(c, r.flats[l]), h, ps.layer(c, static_cast<int64_t>(l)), &saved[l]);
      }
      at::Tensor g_embed = at::zeros_like(r.m.root().embed_tokens), g_norm = at::zeros_like(r.m.root().norm);
      at::Tensor g_head = c.tie_word_embeddings ? g_embed : at::zeros_like(r.m.root().lm_head);
      HeadResult hr = head_loss_fwd_bwd(c, h, r.m.root().norm, r.head_w(), targets.reshape(-1), 1.0, g_norm, g_head, 7);
      check_rel(hr.loss_sum, ref->get("loss_sum"), 1e-4, std::string(name) + " loss");
      at::Tensor dh = hr.dh;
      for (size_t l = r.flats.size(); l-- > 0;)
        dh = block_bwd(c, block_view(c, r.flats[l]), block_view(c, r.grads[l]), inputs[l], saved[l], dh,
                       ps.layer(c, static_cast<int64_t>(l)), nullptr, nullptr, /*write_grads=*/l % 2 == 0);
      embed_bwd(c, g_embed, ids.reshape(-1), dh);

      // Every parameter's gradient under its checkpoint name (Phi-3's q/k/v and gate/up: rows of the fused one).
      std::map<std::string, at::Tensor> ours = {{"model.embed_tokens.weight", g_embed}, {"model.norm.weight", g_norm}};
      if (!c.tie_word_embeddings) ours["lm_head.weight"] = g_head;
      const auto names = BlockWeights::names(c);
      const auto shapes = BlockWeights::shapes(c);
      int64_t checked = 0;
      for (size_t l = 0; l < r.flats.size(); ++l) {
        int64_t off = 0;
        for (size_t i = 0; i < names.size(); ++i) {
          int64_t n = 1;
          for (int64_t s : shapes[i]) n *= s;
          at::Tensor g = r.grads[l].narrow(0, off, n).view(shapes[i]);
          off += n;
          const CheckpointSlot slot = checkpoint_slot(c, names[i]);
          const std::string key = "grad." + LlamaModel::block_param_name(static_cast<int64_t>(l), slot.suffix);
          INFO("gradient " << key);
          REQUIRE(ref->contains(key));
          at::Tensor want = ref->get(key);
          if (slot.rows) want = want.narrow(0, slot.row, slot.rows);
          check_rel(g, want, 1e-4, key + " (" + names[i] + ")");
          ++checked;
        }
      }
      for (const auto& [n, g] : ours) {
        REQUIRE(ref->contains("grad." + n));
        check_rel(g, ref->get("grad." + n), 1e-4, "grad." + n);
        ++checked;
      }
      // Every gradient transformers has was compared (fused ones count once per part).
      int64_t theirs = 0;
      for (const auto& [n, e] : ref->entries()) theirs += n.rfind("grad.", 0) == 0 ? 1 : 0;
      const int64_t fused_extra = c.fused_checkpoint ? 3 * c.num_hidden_layers : 0;  // q,k,v -> 1; gate,up -> 1
      REQUIRE(checked == theirs + fused_extra);
    }
  }
}

TEST_CASE("families: a checkpoint we write has the family's layout and loads back with equal logits", "[fixtures]") {
  at::NoGradGuard no_grad;
  const char* exp = std::getenv("AIR_FAMILIES_EXPORT");
  for (const char* name : kFamilies) {
    DYNAMIC_SECTION(name) {
      const std::string dir = fixture_dir(name);
      Run r(dir);
      auto ref = SafetensorsFile::open(dir + "/reference.safetensors");
      const at::Tensor ids = ref->get("input_ids");
      const fs::path out = exp ? fs::path(exp) / name : fs::temp_directory_path() / ("air-families-" + std::to_string(::getpid())) / name;
      fs::remove_all(out);
      SaveOptions o;
      o.output_dir = out.string();
      o.dtype = at::kFloat;
      save_checkpoint(r.m, o);
      // The same tensors (names and shapes) as transformers wrote: tied embeddings without lm_head, Phi-3 fused.
      auto theirs = SafetensorsFile::open(dir + "/model.safetensors");
      auto mine = SafetensorsFile::open((out / "model.safetensors").string());
      std::set<std::string> tn, mn;
      for (const auto& [n, e] : theirs->entries()) tn.insert(n);
      for (const auto& [n, e] : mine->entries()) mn.insert(n);
      REQUIRE(mn == tn);
      for (const auto& n : tn) {
        INFO(n);
        REQUIRE(at::equal(mine->get(n), theirs->get(n)));
      }
      // config.json: the keys as read, the family's type and architecture.
      std::ifstream in(out / "config.json");
      const nlohmann::json written = nlohmann::json::parse(in);
      std::ifstream in0(dir + "/config.json");
      const nlohmann::json original = nlohmann::json::parse(in0);
      REQUIRE(written["model_type"] == original["model_type"]);
      REQUIRE(written["architectures"] == original["architectures"]);
      for (const auto& [k, v] : original.items())
        if (k != "torch_dtype" && k != "dtype" && k != "use_cache") {
          INFO(k);
          REQUIRE(written[k] == v);
        }
      // Loads back with equal logits.
      Run back(out.string());
      const at::Tensor want = r.logits(ids);
      REQUIRE(at::equal(back.logits(ids), want));
      if (exp) {
        const int64_t B = ids.size(0), T = ids.size(1);
        write_safetensors((out / "expected.safetensors").string(),
                          {{"input_ids", ids}, {"logits", want.reshape({B, T, -1}).contiguous()}});
      } else {
        fs::remove_all(out.parent_path());
      }
    }
  }
}

namespace {

// A module's weight rows in a block view: Llama's q/k/v and gate/up are rows of the fused qkv and gu matrices;
// Phi-3's qkv_proj and gate_up_proj (the modules PEFT adapts on it) are those matrices whole.
at::Tensor module_rows(const ModelConfig& c, const BlockView& v, const std::string& module) {
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim, I = c.intermediate_size;
  if (module == "q_proj") return v.qkv.narrow(0, 0, q);
  if (module == "k_proj") return v.qkv.narrow(0, q, kv);
  if (module == "v_proj") return v.qkv.narrow(0, q + kv, kv);
  if (module == "qkv_proj") return v.qkv;
  if (module == "o_proj") return v.o;
  if (module == "gate_proj") return v.gu.narrow(0, 0, I);
  if (module == "up_proj") return v.gu.narrow(0, I, I);
  if (module == "gate_up_proj") return v.gu;
  REQUIRE(module == "down_proj");
  return v.down;
}

}  // namespace

// Non-zero adapters on every block linear of each family (Phi-3: one A/B pair on each fused module, B spanning
// q | k | v and gate | up), run beside the base GEMMs and folded into them: the LoRA block's output and input
// gradient are those of the plain block with the merged weights W + (alpha / r) B A (the block the fixtures
// check against transformers), and the adapters' gradients follow from that block's weight gradient gW:
// dB = s gW A^T, dA = s B^T gW.
TEST_CASE("families: LoRA (Phi-3 on its fused qkv_proj and gate_up_proj) is the block with merged weights") {
  at::NoGradGuard no_grad;
  for (const auto& [name, j] : tiny_family_configs())
    for (bool fold : {false, true}) {
      DYNAMIC_SECTION(name << (fold ? ", adapters folded into the base GEMMs" : ", adapters beside them")) {
        const ModelConfig c = parse_model_config(j, name);
        LoraConfig lc;
        lc.enabled = true;
        lc.r = 2;
        lc.alpha = 6;
        lc.target_modules = lora_family_targets(lc, c, name);  // all of the family's (the default's seven names)
        const std::vector<LoraParamSpec> specs = lora_block_params(c, lc);
        const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
        if (c.fused_checkpoint) {
          REQUIRE((lc.target_modules == std::vector<std::string>{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
          std::vector<std::string> names;
          for (const auto& p : specs) names.push_back(p.suffix);
          REQUIRE((names == std::vector<std::string>{"self_attn.qkv_proj.lora_A.weight", "self_attn.qkv_proj.lora_B.weight",
                                                      "self_attn.o_proj.lora_A.weight", "self_attn.o_proj.lora_B.weight",
                                                      "mlp.gate_up_proj.lora_A.weight", "mlp.gate_up_proj.lora_B.weight",
                                                      "mlp.down_proj.lora_A.weight", "mlp.down_proj.lora_B.weight"}));
          REQUIRE((specs[0].shape == std::vector<int64_t>{2, c.hidden_size}));
          REQUIRE((specs[1].shape == std::vector<int64_t>{q + 2 * kv, 2}));
          REQUIRE((specs[5].shape == std::vector<int64_t>{2 * c.intermediate_size, 2}));
        } else {
          REQUIRE(lc.target_modules == lora_module_names());
        }
        LlamaModel m(c, at::kCPU, at::kFloat);
        m.init_random(4);
        at::manual_seed(11);
        for (auto& [n, p] : m.named_parameters()) p.add_(at::randn(p.sizes()) * 0.1);
        const int64_t B = 2, T = 7, N = B * T;
        at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1});
        const AttnPlans ps = make_attn_plans(c, Rope(c, at::kCPU), pos, at::Tensor(), at::kFloat, at::kCPU);
        at::Tensor h = at::randn({N, c.hidden_size}), dout = at::randn({N, c.hidden_size});
        for (size_t l = 0; l < m.blocks().size(); ++l) {
          INFO("block " << l);
          const AttnPlan& plan = ps.layer(c, static_cast<int64_t>(l));
          std::vector<at::Tensor> parts;
          for (const auto& t : m.blocks()[l].list()) parts.push_back(t.reshape(-1));
          const at::Tensor base = at::cat(parts);
          std::vector<at::Tensor> ad;
          for (const auto& p : specs) ad.push_back(at::randn(p.shape) * 0.3);
          std::map<std::string, std::pair<at::Tensor, at::Tensor>> ab;  // module -> (A, B)
          for (size_t i = 0; i < specs.size(); ++i) {
            auto& pair = ab[specs[i].module];
            (specs[i].is_a ? pair.first : pair.second) = ad[i];
          }

          // The reference: the plain block with W + s B A in each adapted module's rows.
          at::Tensor merged = base.clone(), gmerged = at::zeros_like(base);
          const BlockView mv = block_view(c, merged), gv = block_view(c, gmerged);
          for (const auto& [mod, a_b] : ab) module_rows(c, mv, mod).add_(at::mm(a_b.second, a_b.first), lc.scaling());
          BlockSaved bs;
          const at::Tensor want = block_fwd(c, mv, h, plan, &bs);
          const at::Tensor want_dh = block_bwd(c, mv, gv, h, bs, dout, plan);

          // Ours on the frozen base (block_view's layout, or the LoRA engine's with the adapters folded in).
          at::Tensor fbase = at::full({lora_base_numel(c, lc)}, 7.0);
          lora_base_pack(c, lc, m.blocks()[l].list(), fbase);
          const LoraBaseView view = lora_base_view(c, lc, fbase);
          const BlockView w = fold ? view.w : block_view(c, base);
          std::vector<at::Tensor> aparts;
          for (const auto& t : ad) aparts.push_back(t.reshape(-1));
          at::Tensor aflat = at::cat(aparts), gflat = at::zeros_like(aflat);
          LoraBlock a = lora_block_weights(c, lc, aflat, fold ? &view : nullptr);
          lora_block_attach_grads(c, lc, a, gflat);
          LoraSaved ls;
          check_rel(lora_block_fwd(c, w, a, h, plan, &ls), want, 1e-5, name + " LoRA block output");
          check_rel(lora_block_bwd(c, w, a, h, ls, dout, plan), want_dh, 1e-4, name + " LoRA input gradient");
          int64_t off = 0;
          for (size_t i = 0; i < specs.size(); ++i) {
            const int64_t n = specs[i].shape[0] * specs[i].shape[1];
            const at::Tensor got = gflat.narrow(0, off, n).view(specs[i].shape);
            off += n;
            const auto& [A, Bm] = ab.at(specs[i].module);
            const at::Tensor gW = module_rows(c, gv, specs[i].module);
            const at::Tensor expect = specs[i].is_a ? at::mm(Bm.t(), gW) * lc.scaling() : at::mm(gW, A.t()) * lc.scaling();
            check_rel(got, expect, 1e-4, name + " gradient of " + specs[i].suffix);
          }
        }
      }
    }
}

TEST_CASE("families: config.json of an unsupported or mixture-of-experts model is refused by name") {
  auto err = [](nlohmann::json j) {
    try {
      parse_model_config(j, "config.json");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  nlohmann::json base = {{"vocab_size", 64}, {"hidden_size", 32}, {"intermediate_size", 64},
                         {"num_hidden_layers", 2}, {"num_attention_heads", 4}};
  for (const char* moe : {"qwen3_moe", "mixtral", "gpt_oss"}) {
    nlohmann::json j = base;
    j["model_type"] = moe;
    const std::string e = err(j);
    INFO(e);
    REQUIRE(e.find(std::string("model_type '") + moe + "' is a mixture-of-experts model") != std::string::npos);
    REQUIRE(e.find("not support yet") != std::string::npos);
  }
  nlohmann::json j = base;
  j["model_type"] = "falcon";
  REQUIRE(err(j).find("model_type 'falcon' is not supported yet") != std::string::npos);
  j["model_type"] = "qwen3";
  j["use_sliding_window"] = true;
  REQUIRE(err(j).find("'use_sliding_window': true is not supported for qwen3") != std::string::npos);
  j = base;
  j["model_type"] = "phi3";
  j["resid_pdrop"] = 0.1;
  REQUIRE(err(j).find("'resid_pdrop' is 0.1; air-train trains without dropout") != std::string::npos);
  j = base;
  j["model_type"] = "gemma3_text";
  j["attn_logit_softcapping"] = 50.0;
  REQUIRE(err(j).find("'attn_logit_softcapping' is not supported") != std::string::npos);
  j = base;
  j["model_type"] = "llama";
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  REQUIRE(err(j).find("rope type 'yarn' is not supported") != std::string::npos);
  // Gemma 3's pattern: every sliding_window_pattern-th layer global, the others sliding.
  j = base;
  j["model_type"] = "gemma3_text";
  j["num_hidden_layers"] = 6;
  j["sliding_window_pattern"] = 3;
  j["sliding_window"] = 8;
  ModelConfig g = parse_model_config(j, "config.json");
  REQUIRE(g.layer_sliding == std::vector<bool>{true, true, false, true, true, false});
  REQUIRE(g.tie_word_embeddings);
  REQUIRE(g.hidden_act == "gelu_pytorch_tanh");
  REQUIRE(g.rope_local_theta == 10000.0);
  REQUIRE(g.rope_theta == 1000000.0);
}

TEST_CASE("families: the Qwen3 and Mistral examples read as their workloads' configurations") {
  struct Example {
    const char* file;
    const char* model;
    bool lora;
  };
  for (const Example& e : {Example{"examples/qwen3_8b_sft/train.yaml", "Qwen/Qwen3-8B", false},
                           Example{"examples/mistral_7b_lora/train.yaml", "mistralai/Mistral-7B-v0.3", true}}) {
    const std::string path = std::string(AIR_SOURCE_DIR) + "/" + e.file;
    INFO(path);
    YAML::Node root = YAML::LoadFile(path);
    YAML::Emitter em;
    em << root["parameters"];
    TrainConfig c;
    apply_yaml(c, em.c_str(), path);
    validate(c);
    REQUIRE(c.model_name == e.model);
    REQUIRE(c.lora.enabled == e.lora);
    REQUIRE(c.max_seq_len == 1024);
    REQUIRE(c.per_device_batch_size == 4);
  }
}

TEST_CASE("families: LoRA's modules are the family's, and a name the model lacks is refused when the config is read") {
  ModelConfig phi, qwen;
  for (const auto& [name, j] : tiny_family_configs()) {
    if (name == "phi3") phi = parse_model_config(j, "phi3/config.json");
    if (name == "qwen3") qwen = parse_model_config(j, "qwen3/config.json");
  }
  TrainConfig t;
  check_model_features(t, phi, "phi3/config.json");  // full fine-tuning
  t.lora.enabled = true;  // the default target_modules, as all-linear: every block linear of the family
  check_model_features(t, phi, "phi3/config.json");
  REQUIRE((lora_family_targets(t.lora, phi, "phi3/config.json") ==
           std::vector<std::string>{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
  REQUIRE(lora_family_targets(t.lora, qwen, "qwen3/config.json") == lora_module_names());
  auto problem = [&](const ModelConfig& c, const std::string& where) -> std::string {  // message | hint
    try {
      check_model_features(t, c, where);
    } catch (const air::Error& e) {
      return std::string(e.what()) + " | " + e.hint();
    }
    return "";
  };
  t.lora.target_modules = {"q_proj", "v_proj"};
  std::string e = problem(phi, "phi3/config.json");
  CHECK_THAT(e, Catch::Contains("lora.target_modules: 'q_proj' is not a block linear of model_type 'phi3' "
                                "(phi3/config.json): its checkpoint fuses q/k/v into qkv_proj") &&
                    Catch::Contains("| use some of qkv_proj, o_proj, gate_up_proj, down_proj, or all-linear"));
  t.lora.target_modules = {"qkv_proj", "down_proj"};
  REQUIRE(problem(phi, "phi3/config.json").empty());
  REQUIRE((lora_family_targets(t.lora, phi, "phi3/config.json") == std::vector<std::string>{"qkv_proj", "down_proj"}));
  e = problem(qwen, "qwen3/config.json");
  CHECK_THAT(e, Catch::Contains("'qkv_proj' is not a block linear of model_type 'qwen3' (qwen3/config.json)") &&
                    Catch::Contains("| use some of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj"));
}

TEST_CASE("families: the hand-written backward is the gradient of its forward (central differences in fp64)") {
  at::NoGradGuard no_grad;
  for (const auto& [name, j] : tiny_family_configs()) {
    DYNAMIC_SECTION(name) {
      const ModelConfig c = parse_model_config(j, name);
      LlamaModel m(c, at::kCPU, at::kDouble);
      m.init_random(21);
      at::manual_seed(5);
      for (auto& [n, p] : m.named_parameters()) p.add_(at::randn(p.sizes(), p.options()) * 0.2);
      const int64_t B = 2, T = 7, N = B * T;  // T > window and > original_max_position_embeddings (longrope's long)
      at::Tensor ids = at::randint(0, c.vocab_size, {B, T}, at::kLong);
      at::Tensor targets = at::randint(0, c.vocab_size, {N}, at::kLong);
      targets[3] = -100;
      at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1});
      const AttnPlans ps = make_attn_plans(c, Rope(c, at::kCPU), pos, at::Tensor(), at::kDouble, at::kCPU);
      auto flat = [&](const BlockWeights& b) {
        std::vector<at::Tensor> parts;
        for (const auto& t : b.list()) parts.push_back(t.reshape(-1));
        return at::cat(parts);
      };
      // The loss in fp64 end to end (the forward pieces, then the cross-entropy of the whole logits).
      auto loss_of = [&](const LlamaModel& mm) {
        at::Tensor h = embed_fwd(c, mm.root().embed_tokens, ids.reshape(-1));
        for (size_t l = 0; l < mm.blocks().size(); ++l)
          h = block_fwd(c, block_view(c, flat(mm.blocks()[l])), h, ps.layer(c, static_cast<int64_t>(l)), nullptr);
        at::Tensor logits = head_logits(c, h, mm.root().norm, mm.root().output_weight());
        return at::cross_entropy_loss(logits, targets, {}, at::Reduction::Sum, -100).item<double>();
      };
      // Gradients from the hand-written backward.
      std::vector<at::Tensor> flats, grads, inputs;
      std::vector<BlockSaved> saved(m.blocks().size());
      at::Tensor h = embed_fwd(c, m.root().embed_tokens, ids.reshape(-1));
      for (size_t l = 0; l < m.blocks().size(); ++l) {
        flats.push_back(flat(m.blocks()[l]));
        grads.push_back(at::zeros_like(flats.back()));
        inputs.push_back(h);
        h = block_fwd(c, block_view(c, flats[l]), h, ps.layer(c, static_cast<int64_t>(l)), &saved[l]);
      }
      at::Tensor ge = at::zeros_like(m.root().embed_tokens), gn = at::zeros_like(m.root().norm);
      at::Tensor gh = c.tie_word_embeddings ? ge : at::zeros_like(m.root().lm_head);
      HeadResult hr = head_loss_fwd_bwd(c, h, m.root().norm, m.root().output_weight(), targets, 1.0, gn, gh, 5);
      REQUIRE(std::abs(hr.loss_sum.item<double>() - loss_of(m)) <= 1e-4 * std::abs(loss_of(m)));
      at::Tensor dh = hr.dh;
      for (size_t l = m.blocks().size(); l-- > 0;)
        dh = block_bwd(c, block_view(c, flats[l]), block_view(c, grads[l]), inputs[l], saved[l], dh,
                       ps.layer(c, static_cast<int64_t>(l)));
      embed_bwd(c, ge, ids.reshape(-1), dh);
      // Per parameter: a random direction v, (L(p + e v) - L(p - e v)) / 2e against <grad, v>. The ops keep some
      // values in fp32 (RMSNorm's rstd, the loss's math), so the differences carry noise of ~1e-3 relative at
      // this e: the bound is 1e-2, and a missing or wrong term of the backward is off by far more. (The exact
      // comparison is the fixtures' test above.)
      std::map<std::string, at::Tensor> g = {{"model.embed_tokens.weight", ge}, {"model.norm.weight", gn}};
      if (!c.tie_word_embeddings) g["lm_head.weight"] = gh;
      const auto names = BlockWeights::names(c);
      const auto shapes = BlockWeights::shapes(c);
      for (size_t l = 0; l < grads.size(); ++l) {
        int64_t off = 0;
        for (size_t i = 0; i < names.size(); ++i) {
          int64_t n = 1;
          for (int64_t s : shapes[i]) n *= s;
          g[LlamaModel::block_param_name(static_cast<int64_t>(l), names[i])] = grads[l].narrow(0, off, n).view(shapes[i]);
          off += n;
        }
      }
      for (auto& [n, p] : m.named_parameters()) {
        at::Tensor v = at::randn(p.sizes(), p.options());
        const double e = 1e-4;
        p.add_(v * e);
        const double up = loss_of(m);
        p.sub_(v * (2 * e));
        const double down = loss_of(m);
        p.add_(v * e);
        const double fd = (up - down) / (2 * e), an = (g.at(n).to(at::kDouble) * v).sum().item<double>();
        INFO(name << " " << n << ": finite difference " << fd << ", backward " << an);
        REQUIRE(std::abs(fd - an) <= 1e-2 * std::max(1.0, std::abs(fd)));
      }
    }
  }
}

TEST_CASE("families: save -> load gives the same weights, tied heads and Phi-3's fused tensors as HF lays them out") {
  at::NoGradGuard no_grad;
  for (const auto& [name, j] : tiny_family_configs()) {
    DYNAMIC_SECTION(name) {
      const ModelConfig c = parse_model_config(j, name);
      LlamaModel m(c, at::kCPU, at::kFloat);
      m.init_random(8);
      const fs::path out = fs::temp_directory_path() / ("air-families-save-" + std::to_string(::getpid())) / name;
      fs::remove_all(out);
      SaveOptions o;
      o.output_dir = out.string();
      o.dtype = at::kFloat;
      save_checkpoint(m, o);
      auto file = SafetensorsFile::open((out / "model.safetensors").string());
      REQUIRE(file->contains("lm_head.weight") == !c.tie_word_embeddings);
      REQUIRE(file->contains("model.layers.0.self_attn.qkv_proj.weight") == c.fused_checkpoint);
      REQUIRE(file->contains("model.layers.0.mlp.gate_up_proj.weight") == c.fused_checkpoint);
      REQUIRE(file->contains("model.layers.0.self_attn.q_proj.weight") == !c.fused_checkpoint);
      REQUIRE(file->contains("model.layers.1.self_attn.q_proj.bias") == c.qkv_bias);
      REQUIRE(file->contains("model.layers.1.self_attn.q_norm.weight") == c.qk_norm);
      REQUIRE(file->contains("model.layers.1.pre_feedforward_layernorm.weight") == c.sandwich_norm);
      REQUIRE(file->contains("model.layers.1.post_feedforward_layernorm.weight") == c.sandwich_norm);
      REQUIRE(file->entries().size() == checkpoint_specs(c, at::kFloat).size());
      if (c.norm_plus_one) REQUIRE(at::equal(m.root().norm, at::zeros_like(m.root().norm)));  // (1 + w): w starts at 0
      if (c.qkv_bias) REQUIRE(at::equal(m.blocks()[0].q_bias, at::zeros_like(m.blocks()[0].q_bias)));
      std::ifstream in(out / "config.json");
      const nlohmann::json written = nlohmann::json::parse(in);
      REQUIRE(written["model_type"] == c.model_type);
      REQUIRE(written["architectures"][0] == c.architecture);
      LlamaModel back(load_model_config((out / "config.json").string()), at::kCPU, at::kFloat);
      back.load_pretrained(out.string());
      const auto a = m.named_parameters(), b = back.named_parameters();
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        INFO(a[i].first);
        REQUIRE(a[i].first == b[i].first);
        REQUIRE(at::equal(a[i].second, b[i].second));
      }
      fs::remove_all(out.parent_path());
    }
  }
}

TEST_CASE("families: FP8 (emulated on the CPU) runs every family's block close to the same block in fp32") {
  at::NoGradGuard no_grad;
  auto rel = [](const at::Tensor& a, const at::Tensor& b) {
    return ((a - b).norm() / b.norm().clamp_min(1e-12)).item<double>();
  };
  for (const auto& [name, j] : tiny_family_configs()) {
    DYNAMIC_SECTION(name) {
      const ModelConfig c = parse_model_config(j, name);
      LlamaModel m(c, at::kCPU, at::kFloat);
      m.init_random(6);
      at::manual_seed(2);
      for (auto& [n, p] : m.named_parameters()) p.add_(at::randn(p.sizes()) * 0.1);
      std::vector<at::Tensor> parts;
      for (const auto& t : m.blocks()[0].list()) parts.push_back(t.reshape(-1));
      at::Tensor flat = at::cat(parts);
      const BlockView w = block_view(c, flat);
      const int64_t B = 2, T = 7, N = B * T;
      at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1});
      const AttnPlans ps = make_attn_plans(c, Rope(c, at::kCPU), pos, at::Tensor(), at::kFloat, at::kCPU);
      const AttnPlan& plan = ps.layer(c, 0);
      at::Tensor h = at::randn({N, c.hidden_size}), dout = at::randn({N, c.hidden_size});
      for (fp8::Scaling s : {fp8::Scaling::kTensorwise, fp8::Scaling::kRowwise}) {
        Fp8Block q = quantize_block(w, s);
        BlockSaved s32, s8;
        at::Tensor y32 = block_fwd(c, w, h, plan, &s32), y8 = block_fwd(c, w, h, plan, &s8, &q);
        at::Tensor g32 = at::zeros_like(flat), g8 = at::zeros_like(flat), amax;
        at::Tensor dh32 = block_bwd(c, w, block_view(c, g32), h, s32, dout, plan);
        at::Tensor dh8 = block_bwd(c, w, block_view(c, g8), h, s8, dout, plan, &q, &amax);
        INFO((s == fp8::Scaling::kTensorwise ? "tensorwise" : "rowwise"));
        REQUIRE(rel(y8, y32) < 0.1);
        REQUIRE(rel(y8, y32) > 1e-5);  // FP8 did run
        // Tiny sizes (hidden 16) and Gemma's norms after attention and the MLP (which rescale a small output)
        // make e4m3's error larger than at real sizes: a wiring mistake (a wrong amax, a missed term) is off by
        // far more.
        REQUIRE(rel(dh8, dh32) < 0.3);
        REQUIRE(rel(g8, g32) < 0.3);
        if (s == fp8::Scaling::kTensorwise) REQUIRE(amax.item<float>() == dh8.abs().max().item<float>());
      }
    }
  }
}
