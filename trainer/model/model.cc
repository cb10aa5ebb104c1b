// The Llama decoder's math, matched to transformers' LlamaForCausalLM (eager and SDPA paths), plus the
// activation-recomputation node and loading weights from safetensors.
#include "trainer/model/model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Reduction.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <set>

#include "core/base/error.h"
#include "trainer/checkpoint/safetensors.h"

#if TORCH_VERSION_MAJOR >= 2
#define AIR_HAVE_SDPA 1
#else
#define AIR_HAVE_SDPA 0
#endif
// at::scaled_dot_product_attention(..., enable_gqa) arrived in libtorch 2.5.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#define AIR_HAVE_SDPA_GQA 1
#else
#define AIR_HAVE_SDPA_GQA 0
#endif

namespace air::train {
namespace {

std::string shape_str(at::IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return x * cos + rotate_half(x) * sin;
}

// [B, kv, T, hd] -> [B, kv * rep, T, hd], each kv head repeated rep times in a row (HF's repeat_kv).
at::Tensor repeat_kv(const at::Tensor& x, int64_t rep) {
  if (rep == 1) return x;
  const auto s = x.sizes();
  return x.unsqueeze(2).expand({s[0], s[1], rep, s[2], s[3]}).reshape({s[0], s[1] * rep, s[2], s[3]});
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                     double scale = 0) {
#if AIR_HAVE_SDPA
  const std::optional<double> sc = scale > 0 ? std::optional<double>(scale) : std::nullopt;
  // Causal rows use the flash/cuDNN kernels; a packed row's block-diagonal mask needs the masked kernels.
  if (mask.defined()) return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false, sc);
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, true, sc);
#else
  if (!(scale > 0)) scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale;
  at::Tensor allowed = mask;
  if (!allowed.defined()) {
    const int64_t T = q.size(2);
    allowed = at::ones({T, T}, q.options().dtype(at::kBool)).tril();
  }
  scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
  return at::matmul(probs, v);
#endif
}

// Recomputes a block in backward. Holds only the block's inputs between forward and backward.
struct RecomputeBackward : torch::autograd::Node {
  RecomputeFn fn;
  std::vector<at::Tensor> saved;
  std::vector<bool> needs_grad;

  std::string name() const override { return "air::RecomputeBackward"; }
  void release_variables() override { saved.clear(); }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    if (saved.empty()) throw Error("activation recomputation ran twice (retain_graph is not supported)");
    std::vector<at::Tensor> in, wrt;
    for (size_t i = 0; i < saved.size(); ++i) {
      at::Tensor t = saved[i].detach();
      if (needs_grad[i]) {
        t.requires_grad_(true);
        wrt.push_back(t);
      }
      in.push_back(t);
    }
    at::Tensor out;
    {
      at::AutoGradMode enable(true);
      out = fn(in);
    }
    torch::autograd::variable_list result(saved.size());
    saved.clear();
    if (wrt.empty() || !grads[0].defined()) return result;
    auto g = torch::autograd::grad({out}, wrt, {grads[0]}, /*retain_graph=*/false, /*create_graph=*/false,
                                   /*allow_unused=*/true);
    for (size_t i = 0, j = 0; i < needs_grad.size(); ++i)
      if (needs_grad[i]) result[i] = g[j++];
    return result;
  }
};

#if AIR_HAVE_SDPA_GQA
bool use_library_gqa() {
  static const bool on = [] {
    const char* v = std::getenv("AIR_TRAIN_ATTN_GQA");  // 0: repeat k/v heads (for comparing kernels)
    return AIR_HAVE_SDPA_GQA && !(v && std::string(v) == "0");
  }();
  return on;
}
#endif

}  // namespace

at::Tensor attention_gqa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                         double scale) {
  const int64_t rep = q.size(1) / k.size(1);
#if AIR_HAVE_SDPA_GQA
  if (rep > 1 && use_library_gqa()) {
    const std::optional<double> sc = scale > 0 ? std::optional<double>(scale) : std::nullopt;
    if (mask.defined()) return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false, sc, true);
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, true, sc, true);
  }
#endif
  return attention(q, repeat_kv(k, rep), repeat_kv(v, rep), mask, scale);
}

const std::vector<std::string>& BlockWeights::names() {
  static const std::vector<std::string> kNames = {
      "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
      "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
      "mlp.gate_proj.weight",   "mlp.up_proj.weight",      "mlp.down_proj.weight"};
  return kNames;
}

std::vector<std::string> BlockWeights::names(const LlamaConfig& c) {
  std::vector<std::string> n = names();
  if (c.sandwich_norm) n[5] = "pre_feedforward_layernorm.weight";
  if (c.qkv_bias)
    for (const char* b : {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"}) n.push_back(b);
  if (c.qk_norm)
    for (const char* b : {"self_attn.q_norm.weight", "self_attn.k_norm.weight"}) n.push_back(b);
  if (c.sandwich_norm)
    for (const char* b : {"post_attention_layernorm.weight", "post_feedforward_layernorm.weight"}) n.push_back(b);
  return n;
}

std::vector<std::vector<int64_t>> BlockWeights::shapes(const LlamaConfig& c) {
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim,
                i = c.intermediate_size;
  std::vector<std::vector<int64_t>> s = {{h}, {q, h}, {kv, h}, {kv, h}, {h, q}, {h}, {i, h}, {i, h}, {h, i}};
  if (c.qkv_bias)
    for (int64_t n : {q, kv, kv}) s.push_back({n});
  if (c.qk_norm) s.insert(s.end(), {{c.head_dim}, {c.head_dim}});
  if (c.sandwich_norm) s.insert(s.end(), {{h}, {h}});
  return s;
}

std::vector<at::Tensor> BlockWeights::list() const {
  std::vector<at::Tensor> out = {input_layernorm, q_proj, k_proj, v_proj, o_proj, post_attention_layernorm,
                                 gate_proj, up_proj, down_proj};
  for (const at::Tensor* t : {&q_bias, &k_bias, &v_bias, &q_norm, &k_norm, &post_attn_norm, &post_ffn_norm})
    if (t->defined()) out.push_back(*t);
  return out;
}

BlockWeights BlockWeights::from_list(const std::vector<at::Tensor>& t) {
  if (t.size() < 9) throw std::invalid_argument("BlockWeights::from_list needs 9 tensors");
  BlockWeights w;
  w.input_layernorm = t[0];
  w.q_proj = t[1];
  w.k_proj = t[2];
  w.v_proj = t[3];
  w.o_proj = t[4];
  w.post_attention_layernorm = t[5];
  w.gate_proj = t[6];
  w.up_proj = t[7];
  w.down_proj = t[8];
  return w;
}

BlockWeights BlockWeights::from_list(const LlamaConfig& c, const std::vector<at::Tensor>& t) {
  if (t.size() != names(c).size())
    throw std::invalid_argument("BlockWeights::from_list: " + std::to_string(t.size()) + " tensors for a block of " +
                                std::to_string(names(c).size()));
  BlockWeights w = from_list(t);
  size_t i = 9;
  if (c.qkv_bias) {
    w.q_bias = t[i++];
    w.k_bias = t[i++];
    w.v_bias = t[i++];
  }
  if (c.qk_norm) {
    w.q_norm = t[i++];
    w.k_norm = t[i++];
  }
  if (c.sandwich_norm) {
    w.post_attn_norm = t[i++];
    w.post_ffn_norm = t[i++];
  }
  return w;
}

BlockWeights BlockWeights::to(at::ScalarType dtype) const {
  BlockWeights w = *this;
  for (at::Tensor* t : {&w.input_layernorm, &w.q_proj, &w.k_proj, &w.v_proj, &w.o_proj, &w.post_attention_layernorm,
                        &w.gate_proj, &w.up_proj, &w.down_proj, &w.q_bias, &w.k_bias, &w.v_bias, &w.q_norm, &w.k_norm,
                        &w.post_attn_norm, &w.post_ffn_norm})
    if (t->defined()) *t = t->to(dtype);
  return w;
}

namespace {
// 1 / (ext * theta^(2i / dim)) over the rotary dimensions (ext: longrope's per-frequency factors, or none).
at::Tensor base_inv_freq(double theta, int64_t dim, const std::vector<double>& ext = {}) {
  at::Tensor exponent = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim);
  at::Tensor base = at::pow(at::scalar_tensor(theta, at::kFloat), exponent);
  if (!ext.empty()) base = base * at::tensor(ext, at::kDouble).to(at::kFloat);
  return 1.0 / base;
}
}  // namespace

Rope::Rope(const LlamaConfig& c, at::Device device) {
  const int64_t dim = c.rotary_dim > 0 ? c.rotary_dim : c.head_dim;
  const auto& r = c.rope_scaling;
  at::Tensor inv = base_inv_freq(c.rope_theta, dim, r.type == "longrope" ? r.short_factor : std::vector<double>{});
  if (r.type == "llama3") {
    const double old_ctx = static_cast<double>(r.original_max_position_embeddings);
    const double low_wavelen = old_ctx / r.low_freq_factor, high_wavelen = old_ctx / r.high_freq_factor;
    at::Tensor wavelen = 2.0 * M_PI / inv;
    at::Tensor scaled = at::where(wavelen > low_wavelen, inv / r.factor, inv);
    at::Tensor smooth = (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
    at::Tensor smoothed = (1 - smooth) * scaled / r.factor + smooth * scaled;
    at::Tensor medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
    inv = at::where(medium, smoothed, scaled);
  } else if (r.type == "linear") {
    inv = inv / r.factor;
  } else if (r.type == "longrope") {
    inv_freq_long_ = base_inv_freq(c.rope_theta, dim, r.long_factor).to(device);
    long_from_ = r.original_max_position_embeddings;
    attention_factor_ = r.attention_factor;
  }
  inv_freq_ = inv.to(device);
  if (c.rope_local_theta > 0) inv_freq_local_ = base_inv_freq(c.rope_local_theta, dim).to(device);
}

const at::Tensor& Rope::inv_freq_for(bool sliding, int64_t max_position) const {
  if (sliding && inv_freq_local_.defined()) return inv_freq_local_;
  // transformers switches to the long factors once the sequence (max position + 1) exceeds the original length.
  if (inv_freq_long_.defined() && max_position + 1 > long_from_) return inv_freq_long_;
  return inv_freq_;
}

AttentionContext Rope::context(const at::Tensor& positions, const at::Tensor& segments, at::ScalarType dtype) const {
  AttentionContext ctx;
  at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq_.view({1, 1, -1});
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  ctx.cos = emb.cos().to(dtype);
  ctx.sin = emb.sin().to(dtype);
  if (segments.defined()) {
    const int64_t T = positions.size(1);
    at::Tensor same = segments.unsqueeze(2).eq(segments.unsqueeze(1));
    at::Tensor causal = at::ones({T, T}, same.options().dtype(at::kBool)).tril();
    ctx.mask = same.logical_and(causal).unsqueeze(1);
  }
  return ctx;
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor var = xf.pow(2).mean(-1, true);
  return weight * (xf * at::rsqrt(var + eps)).to(x.scalar_type());
}

at::Tensor embed(const RootWeights& w, const at::Tensor& input_ids) { return at::embedding(w.embed_tokens, input_ids); }

at::Tensor block_forward(const LlamaConfig& c, const BlockWeights& w, const at::Tensor& h, const AttentionContext& ctx) {
  if (!c.plain_llama())
    throw Error("the autograd reference block (model.h) computes Llama's block only; model_type '" + c.model_type +
                "' runs in the hand-written block (block.h)");
  const int64_t B = h.size(0), T = h.size(1), hd = c.head_dim, nh = c.num_attention_heads,
                nkv = c.num_key_value_heads;
  at::Tensor x = rms_norm(h, w.input_layernorm, c.rms_norm_eps);
  at::Tensor q = at::linear(x, w.q_proj).view({B, T, nh, hd}).transpose(1, 2);
  at::Tensor k = at::linear(x, w.k_proj).view({B, T, nkv, hd}).transpose(1, 2);
  at::Tensor v = at::linear(x, w.v_proj).view({B, T, nkv, hd}).transpose(1, 2);
  at::Tensor cos = ctx.cos.unsqueeze(1), sin = ctx.sin.unsqueeze(1);
  q = apply_rope(q, cos, sin);
  k = repeat_kv(apply_rope(k, cos, sin), nh / nkv);
  v = repeat_kv(v, nh / nkv);
  at::Tensor a = attention(q, k, v, ctx.mask).transpose(1, 2).reshape({B, T, nh * hd});
  at::Tensor h1 = h + at::linear(a, w.o_proj);
  at::Tensor y = rms_norm(h1, w.post_attention_layernorm, c.rms_norm_eps);
  return h1 + at::linear(at::silu(at::linear(y, w.gate_proj)) * at::linear(y, w.up_proj), w.down_proj);
}

at::Tensor head(const LlamaConfig& c, const RootWeights& w, const at::Tensor& h) {
  return at::linear(rms_norm(h, w.norm, c.rms_norm_eps), w.output_weight());
}

at::Tensor loss_sum(const at::Tensor& logits, const at::Tensor& targets) {
  const int64_t V = logits.size(-1);
  return at::cross_entropy_loss(logits.reshape({-1, V}).to(at::kFloat), targets.reshape({-1}), {},
                                at::Reduction::Sum, -100, 0.0);
}

const char* attention_kernel_name() { return AIR_HAVE_SDPA ? "sdpa" : "manual"; }

at::Tensor recompute_checkpoint(RecomputeFn fn, const std::vector<at::Tensor>& inputs) {
  at::Tensor out;
  {
    at::NoGradGuard no_grad;
    out = fn(inputs);
  }
  bool any = false;
  std::vector<bool> needs;
  for (const auto& t : inputs) {
    needs.push_back(t.defined() && t.requires_grad());
    any = any || needs.back();
  }
  if (!any || !at::GradMode::is_enabled()) return out;
  std::shared_ptr<RecomputeBackward> node(new RecomputeBackward(), torch::autograd::deleteNode);
  node->fn = std::move(fn);
  node->needs_grad = needs;
  for (const auto& t : inputs) node->saved.push_back(t.detach());
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  torch::autograd::create_gradient_edge(out, node);
  return out;
}

LlamaModel::LlamaModel(LlamaConfig config, at::Device device, at::ScalarType dtype) : config_(std::move(config)) {
  auto opts = at::TensorOptions().device(device).dtype(dtype);
  const auto& c = config_;
  root_.embed_tokens = at::empty({c.vocab_size, c.hidden_size}, opts);
  root_.norm = at::empty({c.hidden_size}, opts);
  if (!c.tie_word_embeddings) root_.lm_head = at::empty({c.vocab_size, c.hidden_size}, opts);
  const auto shapes = BlockWeights::shapes(c);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    std::vector<at::Tensor> ts;
    for (const auto& s : shapes) ts.push_back(at::empty(s, opts));
    blocks_.push_back(BlockWeights::from_list(c, ts));
  }
}

CheckpointSlot checkpoint_slot(const LlamaConfig& c, const std::string& suffix) {
  if (!c.fused_checkpoint) return {suffix, 0, 0};
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim,
                i = c.intermediate_size;
  if (suffix == "self_attn.q_proj.weight") return {"self_attn.qkv_proj.weight", 0, q};
  if (suffix == "self_attn.k_proj.weight") return {"self_attn.qkv_proj.weight", q, kv};
  if (suffix == "self_attn.v_proj.weight") return {"self_attn.qkv_proj.weight", q + kv, kv};
  if (suffix == "mlp.gate_proj.weight") return {"mlp.gate_up_proj.weight", 0, i};
  if (suffix == "mlp.up_proj.weight") return {"mlp.gate_up_proj.weight", i, i};
  return {suffix, 0, 0};
}

std::vector<std::pair<std::string, std::vector<int64_t>>> checkpoint_block_tensors(const LlamaConfig& c) {
  const auto names = BlockWeights::names(c);
  const auto shapes = BlockWeights::shapes(c);
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for (size_t i = 0; i < names.size(); ++i) {
    CheckpointSlot s = checkpoint_slot(c, names[i]);
    if (!s.rows) {
      out.emplace_back(names[i], shapes[i]);
    } else if (s.row == 0) {  // the first part of a fused tensor: the whole tensor goes here
      int64_t rows = 0;
      for (size_t j = i; j < names.size(); ++j) {
        CheckpointSlot t = checkpoint_slot(c, names[j]);
        if (t.suffix == s.suffix) rows = std::max(rows, t.row + t.rows);
      }
      out.push_back({s.suffix, {rows, shapes[i][1]}});
    }
  }
  return out;
}

std::string LlamaModel::block_param_name(int64_t layer, const std::string& suffix) {
  return "model.layers." + std::to_string(layer) + "." + suffix;
}

std::vector<std::pair<std::string, at::Tensor>> LlamaModel::named_parameters() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  out.emplace_back("model.embed_tokens.weight", root_.embed_tokens);
  const auto names = BlockWeights::names(config_);
  for (size_t l = 0; l < blocks_.size(); ++l) {
    auto ts = blocks_[l].list();
    for (size_t i = 0; i < ts.size(); ++i) out.emplace_back(block_param_name(static_cast<int64_t>(l), names[i]), ts[i]);
  }
  out.emplace_back("model.norm.weight", root_.norm);
  if (root_.lm_head.defined()) out.emplace_back("lm_head.weight", root_.lm_head);
  return out;
}

std::vector<at::Tensor> LlamaModel::parameters() const {
  std::vector<at::Tensor> out;
  for (auto& [n, t] : named_parameters()) out.push_back(t);
  return out;
}

double LlamaModel::one_d_init(const std::string& name) const {
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) return 0.0;
  return config_.norm_plus_one ? 0.0 : 1.0;  // (1 + w) norms start at w = 0
}

void LlamaModel::init_random(uint64_t seed) {
  at::NoGradGuard no_grad;
  const auto params = named_parameters();
  if (!params.empty() && params[0].second.is_cuda()) {
    // On a GPU the device's generator (seeded here) draws the weights: seconds for 8B parameters instead of
    // minutes on one CPU thread. The same seed gives the same weights on the same kind of device.
    at::manual_seed(seed);
    for (auto& [name, p] : params) {
      if (p.dim() == 1) {
        p.fill_(one_d_init(name));
        continue;
      }
      p.copy_(at::empty(p.sizes(), p.options().dtype(at::kFloat)).normal_(0.0, config_.initializer_range));
    }
    return;
  }
  auto gen = at::detail::createCPUGenerator(seed);
  for (auto& [name, p] : named_parameters()) {
    if (p.dim() == 1) {
      p.fill_(one_d_init(name));
      continue;
    }
    at::Tensor t = at::empty(p.sizes(), at::kFloat);
    t.normal_(0.0, config_.initializer_range, gen);
    p.copy_(t);
  }
}

void LlamaModel::load_pretrained(const std::string& dir) {
  at::NoGradGuard no_grad;
  WeightSet ws = WeightSet::open_dir(dir);
  std::set<std::string> ours;
  const std::string layers = "model.layers.";
  for (auto& [name, p] : named_parameters()) {
    // Phi-3: q/k/v and gate/up are rows of one fused checkpoint tensor each.
    std::string file_name = name;
    CheckpointSlot slot;
    if (name.rfind(layers, 0) == 0) {
      const size_t dot = name.find('.', layers.size());
      slot = checkpoint_slot(config_, name.substr(dot + 1));
      file_name = name.substr(0, dot + 1) + slot.suffix;
    }
    if (!ws.contains(file_name))
      throw Error("weights in " + dir + " lack tensor '" + file_name + "'",
                  "the checkpoint does not match config.json (layers, tied embeddings?)");
    at::Tensor t = ws.get(file_name);
    if (slot.rows) {
      if (t.dim() != 2 || t.size(0) < slot.row + slot.rows)
        throw Error(ws.file_of(file_name) + ": tensor '" + file_name + "' has shape " + shape_str(t.sizes()) +
                    ", too few rows for the fused projection config.json implies");
      t = t.narrow(0, slot.row, slot.rows);
    }
    if (t.sizes() != p.sizes())
      throw Error(ws.file_of(file_name) + ": tensor '" + file_name + "' has shape " + shape_str(t.sizes()) +
                  ", config.json implies " + shape_str(p.sizes()));
    p.copy_(t);
    ours.insert(file_name);
  }
  // transformers itself ignores these: a tied lm_head saved anyway, and old rotary buffers.
  for (const auto& n : ws.names())
    if (!ours.count(n) && n != "lm_head.weight" && n.find("rotary_emb.inv_freq") == std::string::npos)
      std::cerr << "air-train: warning: ignoring tensor '" << n << "' in " << ws.file_of(n) << "\n";
}

void LlamaModel::set_requires_grad(bool on) {
  for (auto& [n, p] : named_parameters()) p.requires_grad_(on);
}

at::Tensor forward_logits(const LlamaModel& m, const Rope& rope, const at::Tensor& input_ids,
                          const at::Tensor& positions, const at::Tensor& segments, at::ScalarType compute,
                          bool recompute) {
  const LlamaConfig* c = &m.config();
  AttentionContext ctx = rope.context(positions, segments, compute);
  RootWeights rw{m.root().embed_tokens.to(compute), m.root().norm.to(compute),
                 m.root().lm_head.defined() ? m.root().lm_head.to(compute) : at::Tensor()};
  at::Tensor h = embed(rw, input_ids);
  for (const auto& b : m.blocks()) {
    if (!recompute) {
      h = block_forward(*c, b.to(compute), h, ctx);
      continue;
    }
    std::vector<at::Tensor> inputs = {h};
    for (const auto& t : b.list()) inputs.push_back(t);
    h = recompute_checkpoint(
        [c, ctx, compute](const std::vector<at::Tensor>& in) {
          BlockWeights w = BlockWeights::from_list({in.begin() + 1, in.end()}).to(compute);
          return block_forward(*c, w, in[0], ctx);
        },
        inputs);
  }
  return head(*c, rw, h);
}

}  // namespace air::train
