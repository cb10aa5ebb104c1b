// The hand-written block forward/backward and the chunked head + cross-entropy (trainer/model/block.h).
#include "trainer/model/block.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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
  int64_t H, nh, nkv, hd, I, q, kv, W;
};
Dims dims(const LlamaConfig& c) {
  Dims d{c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.intermediate_size, 0, 0, 0};
  d.q = d.nh * d.hd;
  d.kv = d.nkv * d.hd;
  d.W = d.q + 2 * d.kv;
  return d;
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
  // Dense rows: the library's fused attention under a local autograd graph, kept until the backward.
  at::Tensor base = qkv.detach().requires_grad_(true);
  at::Tensor o;
  {
    at::AutoGradMode grad(true);  // the views too: they must be part of the graph back to `base`
    at::Tensor q = base.narrow(1, 0, d.q).view({p.B, p.T, d.nh, d.hd}).transpose(1, 2);
    at::Tensor k = base.narrow(1, d.q, d.kv).view({p.B, p.T, d.nkv, d.hd}).transpose(1, 2);
    at::Tensor v = base.narrow(1, d.q + d.kv, d.kv).view({p.B, p.T, d.nkv, d.hd}).transpose(1, 2);
    o = attention_gqa(q, k, v, p.mask);
  }
  s.attn_in = base;
  s.attn_out = o;
  return o.detach().transpose(1, 2).reshape({N, d.q});
}

at::Tensor attention_bwd(const Dims& d, const at::Tensor& dattn, const AttnPlan& p, BlockSaved& s) {
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
    return at::cat({std::get<0>(g).reshape({N, d.q}), std::get<1>(g).reshape({N, d.kv}),
                    std::get<2>(g).reshape({N, d.kv})},
                   1);
  }
#endif
  at::Tensor g = dattn.view({p.B, p.T, d.nh, d.hd}).transpose(1, 2);
  auto grads = torch::autograd::grad({s.attn_out}, {s.attn_in}, {g}, /*retain_graph=*/false, /*create_graph=*/false);
  return grads[0];
}

}  // namespace

int64_t block_numel(const LlamaConfig& c) {
  const Dims d = dims(c);
  return 2 * d.H + d.W * d.H + d.H * d.q + 3 * d.I * d.H;
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
  // BlockWeights::names() order: input_layernorm, q, k, v, o, post_attention_layernorm, gate, up, down.
  BlockView v;
  v.ln1 = take({d.H});
  v.qkv = take({d.W, d.H});
  v.o = take({d.H, d.q});
  v.ln2 = take({d.H});
  v.gu = take({2 * d.I, d.H});
  v.down = take({d.H, d.I});
  return v;
}

AttnPlan make_attn_plan(const LlamaConfig& c, const at::Tensor& inv_freq, const at::Tensor& positions,
                        const at::Tensor& segments, at::ScalarType dtype, at::Device device) {
  AttnPlan p;
  p.B = positions.size(0);
  p.T = positions.size(1);
  at::Tensor freqs = positions.to(device).to(at::kFloat).reshape({-1, 1}) * inv_freq.to(device).view({1, -1});
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  p.cos = emb.cos().to(dtype);
  p.sin = emb.sin().to(dtype);
  (void)c;
  if (!segments.defined()) return p;
  if (device.is_cuda() && AIR_HAVE_FLASH_VARLEN) {
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
  at::Tensor seg = segments.to(device);
  at::Tensor same = seg.unsqueeze(2).eq(seg.unsqueeze(1));
  at::Tensor causal = at::ones({p.T, p.T}, same.options().dtype(at::kBool)).tril();
  p.mask = same.logical_and(causal).unsqueeze(1);
  return p;
}

int64_t BlockSaved::bytes() const {
  int64_t n = 0;
  for (const at::Tensor* t : {&xn, &rstd1, &attn_in, &attn_out, &attn, &lse, &h1, &yn, &rstd2, &gu, &a})
    if (t->defined()) n += t->numel() * static_cast<int64_t>(t->element_size());
  return n;
}

int64_t block_saved_bytes(const LlamaConfig& c, int64_t tokens, int64_t elem_size) {
  const Dims d = dims(c);
  // xn, qkv, attention output (+ its transposed copy), h1, yn, gu, a; plus fp32 rstd and lse.
  return tokens * (elem_size * (3 * d.H + d.W + 2 * d.q + 3 * d.I) + 4 * (2 + d.nh));
}

at::Tensor block_fwd(const LlamaConfig& c, const BlockView& w, const at::Tensor& h, const AttnPlan& plan,
                     BlockSaved* saved) {
  const Dims d = dims(c);
  BlockSaved local;
  BlockSaved& s = saved ? *saved : local;
  auto [xn, rstd1] = ops::rms_norm_fwd(h, w.ln1, c.rms_norm_eps);
  at::Tensor qkv = at::mm(xn, w.qkv.t());
  ops::rope_(qkv, plan.cos, plan.sin, d.nh, d.nkv, d.hd, /*inverse=*/false);
  at::Tensor attn = attention_fwd(d, qkv, plan, s);
  at::Tensor h1 = at::addmm(h, attn, w.o.t());  // h + attn @ o^T: the residual add in the GEMM's epilogue
  auto [yn, rstd2] = ops::rms_norm_fwd(h1, w.ln2, c.rms_norm_eps);
  at::Tensor gu = at::mm(yn, w.gu.t());
  at::Tensor a = ops::swiglu_fwd(gu);
  at::Tensor out = at::addmm(h1, a, w.down.t());
  if (saved) {
    s.xn = xn;
    s.rstd1 = rstd1;
    s.attn = attn;
    s.h1 = h1;
    s.yn = yn;
    s.rstd2 = rstd2;
    s.gu = gu;
    s.a = a;
  }
  return out;
}

at::Tensor block_bwd(const LlamaConfig& c, const BlockView& w, const BlockView& g, const at::Tensor& h,
                     BlockSaved& s, const at::Tensor& dout, const AttnPlan& plan) {
  const Dims d = dims(c);
  if (s.empty()) throw Error("block_bwd: the block's activations were not saved");
  // MLP: out = h1 + swiglu(yn @ gu^T) @ down^T.
  at::Tensor da = at::mm(dout, w.down);
  g.down.addmm_(dout.t(), s.a);
  s.a = at::Tensor();
  at::Tensor dgu = ops::swiglu_bwd(s.gu, da);
  da = at::Tensor();
  s.gu = at::Tensor();
  at::Tensor dyn = at::mm(dgu, w.gu);
  g.gu.addmm_(dgu.t(), s.yn);
  dgu = at::Tensor();
  at::Tensor dh1 = ops::rms_norm_bwd(dyn, s.h1, w.ln2, s.rstd2, g.ln2).add_(dout);
  // Attention: h1 = h + attn @ o^T.
  at::Tensor dattn = at::mm(dh1, w.o);
  g.o.addmm_(dh1.t(), s.attn);
  at::Tensor dqkv = attention_bwd(d, dattn, plan, s);
  dattn = at::Tensor();
  ops::rope_(dqkv, plan.cos, plan.sin, d.nh, d.nkv, d.hd, /*inverse=*/true);
  at::Tensor dxn = at::mm(dqkv, w.qkv);
  g.qkv.addmm_(dqkv.t(), s.xn);
  at::Tensor dh = ops::rms_norm_bwd(dxn, h, w.ln1, s.rstd1, g.ln1).add_(dh1);
  s.clear();
  return dh;
}

HeadResult head_loss_fwd_bwd(const LlamaConfig& c, const at::Tensor& h, const at::Tensor& norm_w,
                             const at::Tensor& head_w, const at::Tensor& targets, double scale,
                             const at::Tensor& g_norm, const at::Tensor& g_head, int64_t chunk_rows) {
  const int64_t N = h.size(0);
  auto [hn, rstd] = ops::rms_norm_fwd(h, norm_w, c.rms_norm_eps);
  at::Tensor dhn = at::empty_like(hn);
  at::Tensor loss = at::zeros({}, h.options().dtype(at::kFloat));
  const int64_t chunk = std::max<int64_t>(1, chunk_rows);
  for (int64_t start = 0; start < N; start += chunk) {
    const int64_t n = std::min(chunk, N - start);
    at::Tensor x = hn.narrow(0, start, n);
    at::Tensor tgt = targets.narrow(0, start, n);
    // Logits in the compute dtype (as transformers), the loss in fp32; the logits become their gradient.
    at::Tensor dlogits = at::mm(x, head_w.t());
    loss.add_(ops::cross_entropy_fwd_bwd_(dlogits, tgt, scale));
    at::Tensor dx = dhn.narrow(0, start, n);
    at::mm_out(dx, dlogits, head_w);
    g_head.addmm_(dlogits.t(), x);
  }
  at::Tensor dh = ops::rms_norm_bwd(dhn, h, norm_w, rstd, g_norm);
  return {loss, dh};
}

}  // namespace air::train
