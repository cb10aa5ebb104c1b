// The hand-written block forward/backward and the chunked head + cross-entropy (trainer/model/block.h); with
// `precision: fp8` the block linears go through trainer/model/fp8_linear.h.
#include "trainer/model/block.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "trainer/model/model.h"
#include "trainer/model/ops.h"

// Variable-length flash attention for packed rows: CUDA builds of libtorch >= 2.5 (the signature used here).
#if defined(AIR_TRAIN_CUDA) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))
#define AIR_HAVE_FLASH_VARLEN 1
#else
#define AIR_HAVE_FLASH_VARLEN 0
#endif

namespace air::train {
namespace {

struct Dims {
  int64_t H, nh, nkv, hd, I, q, kv, W, rot;
};
Dims dims(const LlamaConfig& c) {
  Dims d{c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.intermediate_size, 0, 0, 0, 0};
  d.q = d.nh * d.hd;
  d.kv = d.nkv * d.hd;
  d.W = d.q + 2 * d.kv;
  d.rot = c.rotary_dim > 0 ? c.rotary_dim : c.head_dim;
  return d;
}

// Partial rotary (Phi-3's partial_rotary_factor): RoPE on the first `rot` dimensions of every q and k head
// (pairs i and i + rot / 2), the rest passed through; ATen ops on any device (ops::rope_ rotates whole heads).
// qkv: [N, W] rows; cos/sin: [N, rot].
void rope_partial_(const Dims& d, const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin, bool inverse) {
  const int64_t N = qkv.size(0), half = d.rot / 2;
  at::Tensor heads = qkv.narrow(1, 0, d.q + d.kv).view({N, d.nh + d.nkv, d.hd});
  at::Tensor x1 = heads.narrow(2, 0, half), x2 = heads.narrow(2, half, half);
  at::Tensor c = cos.narrow(1, 0, half).unsqueeze(1), sn = sin.narrow(1, 0, half).unsqueeze(1);
  if (inverse) sn = -sn;
  at::Tensor n1 = x1 * c - x2 * sn, n2 = x2 * c + x1 * sn;
  x1.copy_(n1);
  x2.copy_(n2);
}

// RoPE on a fused projection's q and k heads: the whole-head kernel, or the partial rotation.
void rope_any_(const Dims& d, at::Tensor& qkv, const AttnPlan& p, bool inverse, const at::Tensor& amax = {}) {
  if (d.rot == d.hd) {
    ops::rope_(qkv, p.cos, p.sin, d.nh, d.nkv, d.hd, inverse, amax);
    return;
  }
  rope_partial_(d, qkv, p.cos, p.sin, inverse);
  if (amax.defined()) ops::fold_amax(amax, qkv);
}

bool varlen(const AttnPlan& p) { return p.cu_seqlens.defined(); }

// [N, W] fused projection -> attention output [N, nh * hd]; keeps in `s` what the backward needs.
at::Tensor attention_fwd(const Dims& d, const at::Tensor& qkv, const AttnPlan& p, BlockSaved& s) {
  const int64_t N = qkv.size(0);
#if AIR_HAVE_FLASH_VARLEN
  if (varlen(p)) {
    at::Tensor q = qkv.narrow(1, 0, d.q).view({N, d.nh, d.hd});
    at::Tensor k = qkv.narrow(1, d.q, d.kv).view({N, d.nkv, d.hd});
    at::Tensor v = qkv.narrow(1, d.q + d.kv, d.kv).view({N, d.nkv, d.hd});
    auto r = at::_flash_attention_forward(q, k, v, p.cu_seqlens, p.cu_seqlens, p.max_seqlen, p.max_seqlen, 0.0,
                                          /*is_causal=*/true, /*return_debug_mask=*/false);
    s.attn_in = qkv;
    s.attn_out = std::get<0>(r);
    s.lse = std::get<1>(r);
    s.rng = std::get<2>(r);
    return s.attn_out.view({N, d.q});
  }
#endif
  if (varlen(p)) throw Error("variable-length attention needs a CUDA build of libtorch >= 2.5");
  // Dense rows: the library's fused attention under a local autograd graph, kept until the backward. q, k and
  // v (views of qkv) are its leaves: their gradients come back separately and are written into one [N, W]
  // buffer (a graph from qkv itself would give each view's gradient as a zeroed [N, W] tensor, then add them).
  auto leaf = [&](int64_t off, int64_t width, int64_t heads) {
    return qkv.detach().narrow(1, off, width).view({p.B, p.T, heads, d.hd}).transpose(1, 2).requires_grad_(true);
  };
  s.attn_q = leaf(0, d.q, d.nh);
  s.attn_k = leaf(d.q, d.kv, d.nkv);
  s.attn_v = leaf(d.q + d.kv, d.kv, d.nkv);
  at::Tensor o;
  {
    at::AutoGradMode grad(true);
    o = attention_gqa(s.attn_q, s.attn_k, s.attn_v, p.mask, p.scale);
  }
  s.attn_in = qkv;
  s.attn_out = o;
  return o.detach().transpose(1, 2).reshape({N, d.q});
}

// Returns the gradient of the fused q/k/v projection's output before RoPE: the attention's gradients with the
// inverse rotation applied (amax: its FP8 slot, or undefined).
at::Tensor attention_bwd(const Dims& d, const at::Tensor& dattn, const AttnPlan& p, BlockSaved& s,
                         const at::Tensor& amax) {
#if AIR_HAVE_FLASH_VARLEN
  if (varlen(p)) {
    const int64_t N = dattn.size(0);
    const at::Tensor& qkv = s.attn_in;
    at::Tensor q = qkv.narrow(1, 0, d.q).view({N, d.nh, d.hd});
    at::Tensor k = qkv.narrow(1, d.q, d.kv).view({N, d.nkv, d.hd});
    at::Tensor v = qkv.narrow(1, d.q + d.kv, d.kv).view({N, d.nkv, d.hd});
    at::Tensor unused = at::empty({0}, qkv.options());
    auto g = at::_flash_attention_backward(dattn.view({N, d.nh, d.hd}).contiguous(), q, k, v, s.attn_out, s.lse,
                                           p.cu_seqlens, p.cu_seqlens, p.max_seqlen, p.max_seqlen, 0.0, true, s.rng,
                                           unused);
    at::Tensor dqkv = at::cat({std::get<0>(g).reshape({N, d.q}), std::get<1>(g).reshape({N, d.kv}),
                               std::get<2>(g).reshape({N, d.kv})},
                              1);
    rope_any_(d, dqkv, p, /*inverse=*/true, amax);
    return dqkv;
  }
#endif
  at::Tensor g = dattn.view({p.B, p.T, d.nh, d.hd}).transpose(1, 2);
  auto grads = torch::autograd::grad({s.attn_out}, {s.attn_q, s.attn_k, s.attn_v}, {g}, /*retain_graph=*/false,
                                     /*create_graph=*/false);
  // The three gradients ([B, heads, T, hd]) gathered into the [N, W] rows with the inverse RoPE on the way
  // (one pass instead of three copies and an in-place rotation).
  s.attn_q = s.attn_k = s.attn_v = at::Tensor();
  if (d.rot == d.hd) return ops::rope_from_heads(grads[0], grads[1], grads[2], p.cos, p.sin, /*inverse=*/true, amax);
  const int64_t N = p.B * p.T;
  auto rows = [&](const at::Tensor& g, int64_t width) { return g.transpose(1, 2).reshape({N, width}); };
  at::Tensor dqkv = at::cat({rows(grads[0], d.q), rows(grads[1], d.kv), rows(grads[2], d.kv)}, 1);
  rope_any_(d, dqkv, p, /*inverse=*/true, amax);
  return dqkv;
}


// FP8 runs where the emulation does (anything) or where _scaled_mm takes every size of the block's GEMMs
// (tokens, hidden, projections, intermediate: multiples of 16); otherwise the block computes as bf16.
bool fp8_usable(const Dims& d, const at::Tensor& h, const Fp8Block* q) {
  if (!q) return false;
  if (!fp8::native(h)) return true;
  return fp8::shapes_ok(h.size(0), d.H, d.W) && fp8::shapes_ok(d.q, d.I, 2 * d.I);
}

// FP8 tensorwise: where the ops that produce the linears' inputs write their amax (trainer/model/ops.h), so
// the cast needs no pass of its own for it. One zeroed fp32 buffer per block call (one launch); slot(i) is
// undefined (no amax folded anywhere) for bf16 and rowwise.
struct AmaxSlots {
  at::Tensor buf;
  AmaxSlots(const Fp8Block* q, const at::Tensor& like, int64_t n) {
    if (q && q->scaling == fp8::Scaling::kTensorwise) buf = at::zeros({n}, like.options().dtype(at::kFloat));
  }
  at::Tensor slot(int64_t i) const { return buf.defined() ? buf.select(0, i) : at::Tensor(); }
};

// x quantised for an FP8 linear: with its producer's amax (tensorwise) or with the amax taken now.
fp8::Quantized quantize_input(const at::Tensor& x, const Fp8Block* q, const at::Tensor& amax, bool cols) {
  if (amax.defined()) return fp8::quantize_amax(x, amax, /*rows=*/true, cols);
  return fp8::quantize(x, q->scaling, /*rows=*/true, cols);
}

// y = x @ W^T (+ residual). In FP8 (q set) x is quantised once into both operands: `rows` for this GEMM and
// the transposed `cols` that W's gradient takes in backward, kept in *keep_t when given. amax: x's, from
// its producer (or undefined).
at::Tensor linear_fwd(const at::Tensor& x, const at::Tensor& w, const fp8::Weight* qw, const Fp8Block* q,
                      const at::Tensor& residual, fp8::Operand* keep_t, const at::Tensor& amax = {}) {
  // ATen's addmm (copy of the residual, then the GEMM): ops::gemm's cuBLASLt path measured slower here.
  if (!qw) return residual.defined() ? at::addmm(residual, x, w.t()) : at::mm(x, w.t());
  fp8::Quantized xq = quantize_input(x, q, amax, /*cols=*/keep_t != nullptr);
  at::Tensor y = fp8::mm_nt(xq.rows, qw->rows, x.scalar_type(), /*fast_accum=*/true);
  if (keep_t) *keep_t = std::move(xq.cols);
  return residual.defined() ? y.add_(residual) : y;
}

// Given dy = d(x @ W^T): returns dx = dy @ W and adds dW = dy^T @ x into gw. bf16 reads the saved x; FP8
// quantises dy once into both operands (with dy's amax from its producer when given) and reads x's saved
// transposed operand xt.
// write: dW goes into gw with beta 0 (gw's old contents are not read) instead of being added.
at::Tensor linear_bwd(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& gw, const at::Tensor& x,
                      const fp8::Weight* qw, const Fp8Block* q, const fp8::Operand& xt, const at::Tensor& amax,
                      bool write) {
  if (!qw) {
    at::Tensor dx = at::mm(dy, w);
    if (write) {
      at::Tensor out = gw;
      at::mm_out(out, dy.t(), x);
    } else {
      gw.addmm_(dy.t(), x);
    }
    return dx;
  }
  fp8::Quantized dq = quantize_input(dy, q, amax, /*cols=*/true);
  at::Tensor dx = fp8::mm_nt(dq.rows, qw->cols, dy.scalar_type(), /*fast_accum=*/false);
  if (write) {
    at::Tensor out = gw;
    fp8::mm_nt_out(out, dq.cols, xt, /*fast_accum=*/false);
  } else {
    gw.add_(fp8::mm_nt(dq.cols, xt, gw.scalar_type(), /*fast_accum=*/false));
  }
  return dx;
}

}  // namespace

Fp8Block quantize_block(const BlockView& w, fp8::Scaling s) {
  Fp8Block b;
  b.scaling = s;
  b.qkv = fp8::quantize_weight(w.qkv, s);
  b.o = fp8::quantize_weight(w.o, s);
  b.gu = fp8::quantize_weight(w.gu, s);
  b.down = fp8::quantize_weight(w.down, s);
  return b;
}

at::Tensor block_attention_fwd(const LlamaConfig& c, const at::Tensor& qkv, const AttnPlan& plan, BlockSaved& s) {
  return attention_fwd(dims(c), qkv, plan, s);
}

at::Tensor block_attention_bwd(const LlamaConfig& c, const at::Tensor& dattn, const AttnPlan& plan, BlockSaved& s) {
  return attention_bwd(dims(c), dattn, plan, s, {});
}

std::vector<std::pair<int64_t, int64_t>> block_linear_ranges(const LlamaConfig& c) {
  const Dims d = dims(c);
  // block_view's order: ln1, qkv, o, ln2, gu, down.
  const int64_t qkv = d.H, o = qkv + d.W * d.H, ln2 = o + d.H * d.q, gu = ln2 + d.H, down = gu + 2 * d.I * d.H;
  return {{qkv, d.W * d.H}, {o, d.H * d.q}, {gu, 2 * d.I * d.H}, {down, d.H * d.I}};
}

// The family's optional tensors after the six (BlockWeights::names(c) order): q/k/v biases, q/k norms,
// the sandwich norms.
int64_t extras_numel(const LlamaConfig& c, const Dims& d) {
  return (c.qkv_bias ? d.W : 0) + (c.qk_norm ? 2 * d.hd : 0) + (c.sandwich_norm ? 2 * d.H : 0);
}

int64_t block_numel(const LlamaConfig& c) {
  const Dims d = dims(c);
  return 2 * d.H + d.W * d.H + d.H * d.q + 3 * d.I * d.H + extras_numel(c, d);
}

BlockView block_view(const LlamaConfig& c, const at::Tensor& flat) {
  const Dims d = dims(c);
  if (flat.numel() < block_numel(c)) throw Error("block_view: flat buffer too small for the block");
  int64_t off = 0;
  auto take = [&](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    at::Tensor t = flat.narrow(0, off, n).view(shape);
    off += n;
    return t;
  };
  // BlockWeights::names(c) order: input_layernorm, q, k, v, o, the norm before the MLP, gate, up, down, then
  // the q/k/v biases, q/k norms and sandwich norms where the config has them.
  BlockView v;
  v.ln1 = take({d.H});
  v.qkv = take({d.W, d.H});
  v.o = take({d.H, d.q});
  v.ln2 = take({d.H});
  v.gu = take({2 * d.I, d.H});
  v.down = take({d.H, d.I});
  if (c.qkv_bias) v.qkv_b = take({d.W});
  if (c.qk_norm) {
    v.q_norm = take({d.hd});
    v.k_norm = take({d.hd});
  }
  if (c.sandwich_norm) {
    v.post_attn = take({d.H});
    v.post_ffn = take({d.H});
  }
  return v;
}

AttnPlan make_attn_plan(const LlamaConfig& c, const at::Tensor& inv_freq, const at::Tensor& positions,
                        const at::Tensor& segments, at::ScalarType dtype, at::Device device, int64_t window,
                        double cos_scale) {
  AttnPlan p;
  p.B = positions.size(0);
  p.T = positions.size(1);
  p.scale = c.query_scale;
  p.window = window;
  at::Tensor freqs = positions.to(device).to(at::kFloat).reshape({-1, 1}) * inv_freq.to(device).view({1, -1});
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  at::Tensor cos = emb.cos(), sin = emb.sin();
  if (cos_scale != 1.0) {
    cos = cos * cos_scale;
    sin = sin * cos_scale;
  }
  p.cos = cos.to(dtype);
  p.sin = sin.to(dtype);
  const bool windowed = window > 0 && window < p.T;
  const bool custom_scale = c.query_scale > 0 && std::abs(c.query_scale * std::sqrt(static_cast<double>(c.head_dim)) - 1) > 1e-12;
  if (!segments.defined() && !windowed) return p;
  if (segments.defined() && device.is_cuda() && AIR_HAVE_FLASH_VARLEN && !windowed && !custom_scale) {
    // Every run of one segment id within a row is one sequence (padding runs too: they are never targets).
    at::Tensor seg = segments.to(at::kCPU).to(at::kInt).contiguous();
    const int32_t* s = seg.data_ptr<int32_t>();
    std::vector<int32_t> cu{0};
    int64_t longest = 0;
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t t = 1; t <= p.T; ++t)
        if (t == p.T || s[b * p.T + t] != s[b * p.T + t - 1]) {
          const int32_t end = static_cast<int32_t>(b * p.T + t);
          longest = std::max<int64_t>(longest, end - cu.back());
          cu.push_back(end);
        }
    p.cu_seqlens = at::tensor(cu, at::kInt).to(device);
    p.max_seqlen = longest;
    return p;
  }
  // The boolean mask [B, 1, T, T]: causal, within the example (packed rows), within the window (a query at t
  // sees keys t - window < k <= t, as transformers' sliding-window mask).
  at::Tensor causal = at::ones({p.T, p.T}, at::TensorOptions().dtype(at::kBool).device(device)).tril();
  if (windowed) causal = causal.logical_and(at::ones_like(causal).triu(-(window - 1)));
  if (segments.defined()) {
    at::Tensor seg = segments.to(device);
    at::Tensor same = seg.unsqueeze(2).eq(seg.unsqueeze(1));
    p.mask = same.logical_and(causal).unsqueeze(1);
  } else {
    p.mask = causal.view({1, 1, p.T, p.T}).expand({p.B, 1, p.T, p.T});
  }
  return p;
}

AttnPlans make_attn_plans(const LlamaConfig& c, const Rope& rope, const at::Tensor& positions,
                          const at::Tensor& segments, at::ScalarType dtype, at::Device device) {
  const int64_t max_pos = positions.numel() ? positions.max().item<int64_t>() : 0;
  bool any_full = false;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) any_full = any_full || !c.is_sliding(l);
  AttnPlans ps;
  if (any_full)
    ps.full = make_attn_plan(c, rope.inv_freq_for(false, max_pos), positions, segments, dtype, device, 0,
                             rope.attention_factor());
  if (c.any_sliding())
    ps.sliding = make_attn_plan(c, rope.inv_freq_for(true, max_pos), positions, segments, dtype, device,
                                c.sliding_window, rope.attention_factor());
  return ps;
}

at::Tensor embed_fwd(const LlamaConfig& c, const at::Tensor& embed_w, const at::Tensor& ids) {
  at::Tensor h = at::embedding(embed_w, ids);
  if (c.embed_scale != 1.0) h.mul_(at::scalar_tensor(c.embed_scale, h.options()));
  return h;
}

void embed_bwd(const LlamaConfig& c, const at::Tensor& g_embed, const at::Tensor& ids, const at::Tensor& dh) {
  if (c.embed_scale == 1.0) {
    g_embed.index_add_(0, ids, dh);
    return;
  }
  g_embed.index_add_(0, ids, dh * at::scalar_tensor(c.embed_scale, dh.options()));
}

at::Tensor block_norm_weight(const LlamaConfig& c, const at::Tensor& w) { return c.norm_plus_one ? w + 1 : w; }

namespace {
// Per-head RMSNorm of `width` columns starting at `col` of qkv ([N, W]), in place; returns the input and rstd.
std::pair<at::Tensor, at::Tensor> head_norm_fwd(const LlamaConfig& c, at::Tensor& qkv, int64_t col, int64_t width,
                                                const at::Tensor& w) {
  auto [x, rstd] = ops::head_rms_norm_fwd_(qkv, col, width / c.head_dim, c.head_dim, block_norm_weight(c, w),
                                           c.rms_norm_eps);
  return {x, rstd};
}
void head_norm_bwd(const LlamaConfig& c, at::Tensor& dqkv, int64_t col, int64_t width, const at::Tensor& w,
                   const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gw) {
  ops::head_rms_norm_bwd_(dqkv, col, width / c.head_dim, c.head_dim, x, block_norm_weight(c, w), rstd, gw);
}
}  // namespace

void qkv_prepare_fwd(const LlamaConfig& c, const BlockView& w, at::Tensor& qkv, const AttnPlan& plan, BlockSaved& s,
                     bool keep) {
  const Dims d = dims(c);
  if (w.qkv_b.defined()) qkv.add_(w.qkv_b);
  if (c.qk_norm) {
    auto [qx, rq] = head_norm_fwd(c, qkv, 0, d.q, w.q_norm);
    auto [kx, rk] = head_norm_fwd(c, qkv, d.q, d.kv, w.k_norm);
    if (keep) {
      s.q_pre = qx;
      s.rstd_q = rq;
      s.k_pre = kx;
      s.rstd_k = rk;
    }
  }
  rope_any_(d, qkv, plan, /*inverse=*/false);
}

void qkv_prepare_bwd(const LlamaConfig& c, const BlockView& w, const BlockView* g, at::Tensor& dqkv, BlockSaved& s) {
  const Dims d = dims(c);
  if (c.qk_norm) {
    head_norm_bwd(c, dqkv, 0, d.q, w.q_norm, s.q_pre, s.rstd_q, g ? g->q_norm : at::Tensor());
    head_norm_bwd(c, dqkv, d.q, d.kv, w.k_norm, s.k_pre, s.rstd_k, g ? g->k_norm : at::Tensor());
    s.q_pre = s.rstd_q = s.k_pre = s.rstd_k = at::Tensor();
  }
  if (g && g->qkv_b.defined()) g->qkv_b.add_(dqkv.sum(0).to(g->qkv_b.scalar_type()));
}

namespace {
ops::GluAct glu_act(const LlamaConfig& c) {
  return c.hidden_act == "silu" ? ops::GluAct::kSilu : ops::GluAct::kGeluTanh;  // config reading allows only these
}
}  // namespace

at::Tensor glu_fwd(const LlamaConfig& c, const at::Tensor& gu, const at::Tensor& amax) {
  return ops::glu_fwd(gu, glu_act(c), amax);
}

at::Tensor glu_bwd(const LlamaConfig& c, const at::Tensor& gu, const at::Tensor& da, const at::Tensor& amax) {
  return ops::glu_bwd(gu, da, glu_act(c), amax);
}

int64_t BlockSaved::bytes() const {
  int64_t n = 0;
  for (const at::Tensor* t : {&xn, &rstd1, &attn_in, &attn_out, &attn, &lse, &h1, &yn, &rstd2, &gu, &a, &q_pre, &rstd_q,
                              &k_pre, &rstd_k, &ao, &rstd_ao, &mo, &rstd_mo})
    if (t->defined()) n += t->numel() * static_cast<int64_t>(t->element_size());
  for (const fp8::Operand* o : {&q_xn, &q_attn, &q_yn, &q_a}) n += o->bytes();
  return n;
}

int64_t block_saved_bytes(const LlamaConfig& c, int64_t tokens, int64_t elem_size) {
  const Dims d = dims(c);
  // xn, qkv, attention output (+ its transposed copy), h1, yn, gu, a; plus fp32 rstd and lse; the family's
  // pre-norm q/k and sandwich-norm inputs.
  int64_t per = elem_size * (3 * d.H + d.W + 2 * d.q + 3 * d.I) + 4 * (2 + d.nh);
  if (c.qk_norm) per += elem_size * (d.q + d.kv) + 4 * (d.nh + d.nkv);
  if (c.sandwich_norm) per += elem_size * 2 * d.H + 8;
  return tokens * per;
}

at::Tensor block_fwd(const LlamaConfig& c, const BlockView& w, const at::Tensor& h, const AttnPlan& plan,
                     BlockSaved* saved, const Fp8Block* fp8) {
  const Dims d = dims(c);
  const Fp8Block* q = fp8_usable(d, h, fp8) ? fp8 : nullptr;
  BlockSaved local;
  BlockSaved& s = saved ? *saved : local;
  const bool keep = saved != nullptr;
  const bool sandwich = c.sandwich_norm;
  // FP8 tensorwise: RMSNorm and SwiGLU fold their outputs' amax into these slots (xn, yn, a). Attention's
  // output comes from the library's kernel: its amax is taken in quantize (one reduction).
  const AmaxSlots am(q, h, 3);
  auto [xn, rstd1] = ops::rms_norm_fwd(h, block_norm_weight(c, w.ln1), c.rms_norm_eps, am.slot(0));
  at::Tensor qkv =
      linear_fwd(xn, w.qkv, q ? &q->qkv : nullptr, q, at::Tensor(), keep ? &s.q_xn : nullptr, am.slot(0));
  qkv_prepare_fwd(c, w, qkv, plan, s, keep);  // bias, q/k norm, RoPE
  at::Tensor attn = attention_fwd(d, qkv, plan, s);
  // h + attn @ o^T: the residual add in the GEMM's epilogue (bf16) or after it (FP8). Sandwich norms (Gemma 3):
  // h + norm(attn @ o^T).
  at::Tensor h1, ao, rstd_ao;
  if (!sandwich) {
    h1 = linear_fwd(attn, w.o, q ? &q->o : nullptr, q, h, keep ? &s.q_attn : nullptr);
  } else {
    ao = linear_fwd(attn, w.o, q ? &q->o : nullptr, q, at::Tensor(), keep ? &s.q_attn : nullptr);
    at::Tensor n;
    std::tie(n, rstd_ao) = ops::rms_norm_fwd(ao, block_norm_weight(c, w.post_attn), c.rms_norm_eps);
    h1 = n.add_(h);
  }
  auto [yn, rstd2] = ops::rms_norm_fwd(h1, block_norm_weight(c, w.ln2), c.rms_norm_eps, am.slot(1));
  at::Tensor gu = linear_fwd(yn, w.gu, q ? &q->gu : nullptr, q, at::Tensor(), keep ? &s.q_yn : nullptr, am.slot(1));
  at::Tensor a = glu_fwd(c, gu, am.slot(2));
  at::Tensor out, mo, rstd_mo;
  if (!sandwich) {
    out = linear_fwd(a, w.down, q ? &q->down : nullptr, q, h1, keep ? &s.q_a : nullptr, am.slot(2));
  } else {
    mo = linear_fwd(a, w.down, q ? &q->down : nullptr, q, at::Tensor(), keep ? &s.q_a : nullptr, am.slot(2));
    at::Tensor n;
    std::tie(n, rstd_mo) = ops::rms_norm_fwd(mo, block_norm_weight(c, w.post_ffn), c.rms_norm_eps);
    out = n.add_(h1);
  }
  if (saved) {
    s.rstd1 = rstd1;
    s.h1 = h1;
    s.rstd2 = rstd2;
    s.gu = gu;
    s.ao = ao;
    s.rstd_ao = rstd_ao;
    s.mo = mo;
    s.rstd_mo = rstd_mo;
    if (!q) {  // FP8 keeps the quantised operands instead (q_*)
      s.xn = xn;
      s.attn = attn;
      s.yn = yn;
      s.a = a;
    }
  }
  return out;
}

at::Tensor block_bwd(const LlamaConfig& c, const BlockView& w, const BlockView& g, const at::Tensor& h,
                     BlockSaved& s, const at::Tensor& dout, const AttnPlan& plan, const Fp8Block* fp8,
                     at::Tensor* grad_amax, bool write_grads) {
  const Dims d = dims(c);
  const Fp8Block* q = fp8_usable(d, h, fp8) ? fp8 : nullptr;
  if (s.empty()) throw Error("block_bwd: the block's activations were not saved");
  const bool sandwich = c.sandwich_norm;
  // FP8 tensorwise: the gradients' amax from the ops that write them (dgu, dh1 or the post-attention norm's
  // input gradient, dqkv where RoPE is its last op, dh for the block below, the post-MLP norm's input
  // gradient); dout's from the caller when the block above computed it.
  const AmaxSlots am(q, h, 5);
  const at::Tensor dout_amax = am.buf.defined() && grad_amax ? *grad_amax : at::Tensor();
  // MLP: out = h1 + glu(yn @ gu^T) @ down^T (sandwich: h1 + norm(that)).
  at::Tensor dmo = dout, dmo_amax = dout_amax;
  if (sandwich) {
    dmo = ops::rms_norm_bwd(dout, s.mo, block_norm_weight(c, w.post_ffn), s.rstd_mo, g.post_ffn, {}, am.slot(4));
    dmo_amax = am.slot(4);
    s.mo = s.rstd_mo = at::Tensor();
  }
  at::Tensor da = linear_bwd(dmo, w.down, g.down, s.a, q ? &q->down : nullptr, q, s.q_a, dmo_amax, write_grads);
  dmo = at::Tensor();
  s.a = at::Tensor();
  s.q_a = {};
  at::Tensor dgu = glu_bwd(c, s.gu, da, am.slot(0));
  da = at::Tensor();
  s.gu = at::Tensor();
  at::Tensor dyn = linear_bwd(dgu, w.gu, g.gu, s.yn, q ? &q->gu : nullptr, q, s.q_yn, am.slot(0), write_grads);
  dgu = at::Tensor();
  // The residual's gradient (+ dout) added in the RMSNorm backward's kernel.
  at::Tensor dh1 = ops::rms_norm_bwd(dyn, s.h1, block_norm_weight(c, w.ln2), s.rstd2, g.ln2, dout,
                                     sandwich ? at::Tensor() : am.slot(1));
  // Attention: h1 = h + attn @ o^T (sandwich: h + norm(attn @ o^T)).
  at::Tensor dao = dh1;
  if (sandwich) {
    dao = ops::rms_norm_bwd(dh1, s.ao, block_norm_weight(c, w.post_attn), s.rstd_ao, g.post_attn, {}, am.slot(1));
    s.ao = s.rstd_ao = at::Tensor();
  }
  at::Tensor dattn = linear_bwd(dao, w.o, g.o, s.attn, q ? &q->o : nullptr, q, s.q_attn, am.slot(1), write_grads);
  dao = at::Tensor();
  // RoPE's inverse applied; its amax is dqkv's only where nothing changes dqkv after it.
  const bool rope_last = !c.qk_norm;
  at::Tensor dqkv = attention_bwd(d, dattn, plan, s, rope_last ? am.slot(2) : at::Tensor());
  dattn = at::Tensor();
  qkv_prepare_bwd(c, w, &g, dqkv, s);  // q/k norms' backward, bias gradient
  at::Tensor dxn = linear_bwd(dqkv, w.qkv, g.qkv, s.xn, q ? &q->qkv : nullptr, q, s.q_xn,
                              rope_last ? am.slot(2) : at::Tensor(), write_grads);
  at::Tensor dh = ops::rms_norm_bwd(dxn, h, block_norm_weight(c, w.ln1), s.rstd1, g.ln1, dh1, am.slot(3));
  s.clear();
  if (grad_amax) *grad_amax = am.slot(3);
  return dh;
}

int64_t head_chunk_rows(const LlamaConfig& c) {
  return std::max<int64_t>(1, (int64_t{1} << 29) / std::max<int64_t>(1, c.vocab_size));
}

at::Tensor head_logits(const LlamaConfig& c, const at::Tensor& h, const at::Tensor& norm_w, const at::Tensor& head_w) {
  auto [hn, rstd] = ops::rms_norm_fwd(h, block_norm_weight(c, norm_w), c.rms_norm_eps);
  at::Tensor logits = at::mm(hn, head_w.t());
  if (c.final_logit_softcapping > 0) {
    const double cap = c.final_logit_softcapping;
    logits = (logits / cap).tanh_().mul_(cap);
  }
  return logits;
}

HeadResult head_loss_fwd_bwd(const LlamaConfig& c, const at::Tensor& h, const at::Tensor& norm_w,
                             const at::Tensor& head_w, const at::Tensor& targets, double scale,
                             const at::Tensor& g_norm, const at::Tensor& g_head, int64_t chunk_rows,
                             const at::Tensor& dh_out) {
  const int64_t N = h.size(0);
  const at::Tensor nw = block_norm_weight(c, norm_w);
  auto [hn, rstd] = ops::rms_norm_fwd(h, nw, c.rms_norm_eps);
  at::Tensor dhn = at::empty_like(hn);
  at::Tensor loss = at::zeros({}, h.options().dtype(at::kFloat));
  const int64_t chunk = std::max<int64_t>(1, chunk_rows);
  const double cap = c.final_logit_softcapping;
  for (int64_t start = 0; start < N; start += chunk) {
    const int64_t n = std::min(chunk, N - start);
    at::Tensor x = hn.narrow(0, start, n);
    at::Tensor tgt = targets.narrow(0, start, n);
    // Logits in the compute dtype (as transformers), the loss in fp32; the logits become their gradient.
    at::Tensor dlogits = at::mm(x, head_w.t());
    at::Tensor t;  // soft-capping: logits = cap tanh(z / cap); dz = dlogits (1 - tanh^2)
    if (cap > 0) {
      t = (dlogits / cap).tanh_();
      at::mul_out(dlogits, t, cap);
    }
    loss.add_(ops::cross_entropy_fwd_bwd_(dlogits, tgt, scale));
    if (cap > 0) dlogits.mul_(1 - t * t);
    at::Tensor dx = dhn.narrow(0, start, n);
    at::mm_out(dx, dlogits, head_w);
    if (g_head.defined()) g_head.addmm_(dlogits.t(), x);
  }
  at::Tensor dh = ops::rms_norm_bwd(dhn, h, nw, rstd, g_norm, {}, {}, dh_out);
  return {loss, dh};
}

}  // namespace air::train
