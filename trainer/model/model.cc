// The Llama decoder's math, matched to transformers' LlamaForCausalLM (eager and SDPA paths), plus the
// activation-recomputation node and loading weights from safetensors.
#include "trainer/model/model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Reduction.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/version.h>

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

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
#if AIR_HAVE_SDPA
  // Causal rows use the flash/cuDNN kernels; a packed row's block-diagonal mask needs the masked kernels.
  if (mask.defined()) return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false);
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
#else
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
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

at::Tensor attention_gqa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  const int64_t rep = q.size(1) / k.size(1);
#if AIR_HAVE_SDPA_GQA
  if (rep > 1 && use_library_gqa()) {
    if (mask.defined()) return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false, std::nullopt, true);
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, true, std::nullopt, true);
  }
#endif
  return attention(q, repeat_kv(k, rep), repeat_kv(v, rep), mask);
}

const std::vector<std::string>& BlockWeights::names() {
  static const std::vector<std::string> kNames = {
      "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
      "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
      "mlp.gate_proj.weight",   "mlp.up_proj.weight",      "mlp.down_proj.weight"};
  return kNames;
}

std::vector<std::vector<int64_t>> BlockWeights::shapes(const LlamaConfig& c) {
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim,
                i = c.intermediate_size;
  return {{h}, {q, h}, {kv, h}, {kv, h}, {h, q}, {h}, {i, h}, {i, h}, {h, i}};
}

std::vector<at::Tensor> BlockWeights::list() const {
  return {input_layernorm, q_proj, k_proj, v_proj, o_proj, post_attention_layernorm, gate_proj, up_proj, down_proj};
}

BlockWeights BlockWeights::from_list(const std::vector<at::Tensor>& t) {
  if (t.size() < 9) throw std::invalid_argument("BlockWeights::from_list needs 9 tensors");
  return {t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8]};
}

BlockWeights BlockWeights::to(at::ScalarType dtype) const {
  std::vector<at::Tensor> out;
  for (const auto& t : list()) out.push_back(t.to(dtype));
  return from_list(out);
}

Rope::Rope(const LlamaConfig& c, at::Device device) {
  const int64_t dim = c.head_dim;
  at::Tensor exponent = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim);
  at::Tensor inv = 1.0 / at::pow(at::scalar_tensor(c.rope_theta, at::kFloat), exponent);
  if (c.rope_scaling.type == "llama3") {
    const auto& r = c.rope_scaling;
    const double old_ctx = static_cast<double>(r.original_max_position_embeddings);
    const double low_wavelen = old_ctx / r.low_freq_factor, high_wavelen = old_ctx / r.high_freq_factor;
    at::Tensor wavelen = 2.0 * M_PI / inv;
    at::Tensor scaled = at::where(wavelen > low_wavelen, inv / r.factor, inv);
    at::Tensor smooth = (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
    at::Tensor smoothed = (1 - smooth) * scaled / r.factor + smooth * scaled;
    at::Tensor medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
    inv = at::where(medium, smoothed, scaled);
  }
  inv_freq_ = inv.to(device);
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
    blocks_.push_back(BlockWeights::from_list(ts));
  }
}

std::string LlamaModel::block_param_name(int64_t layer, const std::string& suffix) {
  return "model.layers." + std::to_string(layer) + "." + suffix;
}

std::vector<std::pair<std::string, at::Tensor>> LlamaModel::named_parameters() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  out.emplace_back("model.embed_tokens.weight", root_.embed_tokens);
  const auto& names = BlockWeights::names();
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

void LlamaModel::init_random(uint64_t seed) {
  at::NoGradGuard no_grad;
  const auto params = named_parameters();
  if (!params.empty() && params[0].second.is_cuda()) {
    // On a GPU the device's generator (seeded here) draws the weights: seconds for 8B parameters instead of
    // minutes on one CPU thread. The same seed gives the same weights on the same kind of device.
    at::manual_seed(seed);
    for (auto& [name, p] : params) {
      if (p.dim() == 1) {
        p.fill_(1.0);
        continue;
      }
      p.copy_(at::empty(p.sizes(), p.options().dtype(at::kFloat)).normal_(0.0, config_.initializer_range));
    }
    return;
  }
  auto gen = at::detail::createCPUGenerator(seed);
  for (auto& [name, p] : named_parameters()) {
    if (p.dim() == 1) {
      p.fill_(1.0);
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
  for (auto& [name, p] : named_parameters()) {
    if (!ws.contains(name))
      throw Error("weights in " + dir + " lack tensor '" + name + "'",
                  "the checkpoint does not match config.json (layers, tied embeddings?)");
    at::Tensor t = ws.get(name);
    if (t.sizes() != p.sizes())
      throw Error(ws.file_of(name) + ": tensor '" + name + "' has shape " + shape_str(t.sizes()) +
                  ", config.json implies " + shape_str(p.sizes()));
    p.copy_(t);
    ours.insert(name);
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
