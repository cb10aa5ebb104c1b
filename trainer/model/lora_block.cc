// LoRA on the hand-written block: the frozen base's input-gradient GEMMs only, the adapters grouped by
// input (trainer/model/lora_block.h).
#include "trainer/model/lora_block.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>

#include "core/base/error.h"
#include "trainer/model/ops.h"

namespace air::train {
namespace {

struct Group {
  const char* name;
  std::vector<std::string> modules;
  std::vector<int64_t> rows;  // output rows of each module
  int64_t in;
};

// The four groups of block linears that share an input, with their modules' output sizes.
std::vector<Group> groups(const LlamaConfig& c) {
  const int64_t H = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim,
                I = c.intermediate_size;
  return {{"qkv", {"q_proj", "k_proj", "v_proj"}, {q, kv, kv}, H},
          {"o", {"o_proj"}, {H}, q},
          {"gu", {"gate_proj", "up_proj"}, {I, I}, H},
          {"down", {"down_proj"}, {H}, I}};
}

at::Tensor take(const at::Tensor& flat, int64_t& off, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  at::Tensor t = flat.narrow(0, off, n).view(shape);
  off += n;
  return t;
}

// y = x W^T (+ residual) + (x A^T) (s B)^T; keeps x A^T in *xa.
at::Tensor linear_fwd(const at::Tensor& x, const at::Tensor& w, const at::Tensor& residual, const LoraGroup& g,
                      double s, at::Tensor* xa) {
  at::Tensor y = residual.defined() ? at::addmm(residual, x, w.t()) : at::mm(x, w.t());
  if (!g.defined()) return y;
  at::Tensor t = at::mm(x, g.A.t());
  y.addmm_(t, g.B.t());
  (void)s;
  if (xa) *xa = t;
  return y;
}

// dx = dy W + d(xa) A, with d(xa) = dy (s B); adds dB = s dy^T xa (per module) and dA = d(xa)^T x. The base
// weight's gradient dy^T x is not computed; with need_dx false neither is dx (undefined).
at::Tensor linear_bwd(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& x, const at::Tensor& xa,
                      const LoraGroup& g, double s, int64_t r, bool need_dx = true) {
  at::Tensor dx = need_dx ? at::mm(dy, w) : at::Tensor();
  if (!g.defined()) return dx;
  at::Tensor dxa = at::mm(dy, g.B);
  for (const auto& p : g.parts) p.gB.addmm_(dy.narrow(1, p.row, p.rows).t(), xa.narrow(1, p.col, r), 1, s);
  g.gA.addmm_(dxa.t(), x);
  if (need_dx) dx.addmm_(dxa, g.A);
  return dx;
}

}  // namespace

const char* lora_parent(const std::string& module) {
  return module == "gate_proj" || module == "up_proj" || module == "down_proj" ? "mlp" : "self_attn";
}

std::vector<LoraParamSpec> lora_block_params(const LlamaConfig& c, const LoraConfig& lc) {
  std::vector<LoraParamSpec> out;
  for (const Group& g : groups(c)) {
    for (size_t i = 0; i < g.modules.size(); ++i)
      if (lc.targets(g.modules[i]))
        out.push_back({std::string(lora_parent(g.modules[i])) + "." + g.modules[i] + ".lora_A.weight", {lc.r, g.in},
                       g.modules[i], true});
    for (size_t i = 0; i < g.modules.size(); ++i)
      if (lc.targets(g.modules[i]))
        out.push_back({std::string(lora_parent(g.modules[i])) + "." + g.modules[i] + ".lora_B.weight",
                       {g.rows[i], lc.r}, g.modules[i], false});
  }
  return out;
}

int64_t lora_block_numel(const LlamaConfig& c, const LoraConfig& lc) {
  int64_t n = 0;
  for (const auto& p : lora_block_params(c, lc)) n += p.shape[0] * p.shape[1];
  return n;
}

LoraBlock lora_block_weights(const LlamaConfig& c, const LoraConfig& lc, const at::Tensor& flat) {
  if (flat.numel() < lora_block_numel(c, lc)) throw Error("lora_block_view: flat buffer too small for the adapters");
  LoraBlock b;
  b.r = lc.r;
  b.scale = lc.scaling();
  int64_t off = 0;
  LoraGroup* dst[] = {&b.qkv, &b.o, &b.gu, &b.down};
  const auto gs = groups(c);
  for (size_t gi = 0; gi < gs.size(); ++gi) {
    const Group& g = gs[gi];
    std::vector<size_t> mods;
    for (size_t i = 0; i < g.modules.size(); ++i)
      if (lc.targets(g.modules[i])) mods.push_back(i);
    if (mods.empty()) continue;
    const int64_t k = static_cast<int64_t>(mods.size());
    int64_t out = 0;
    for (int64_t rows : g.rows) out += rows;
    LoraGroup& lg = *dst[gi];
    lg.A = take(flat, off, {k * lc.r, g.in});
    lg.B = at::zeros({out, k * lc.r}, flat.options());
    for (int64_t j = 0; j < k; ++j) {
      const size_t i = mods[static_cast<size_t>(j)];
      int64_t row = 0;
      for (size_t m = 0; m < i; ++m) row += g.rows[m];
      at::Tensor bm = take(flat, off, {g.rows[i], lc.r});
      lg.B.narrow(0, row, g.rows[i]).narrow(1, j * lc.r, lc.r).copy_(bm);
      LoraGroup::Part p;
      p.row = row;
      p.rows = g.rows[i];
      p.col = j * lc.r;
      lg.parts.push_back(p);
    }
    lg.B.mul_(b.scale);
  }
  return b;
}

void lora_block_attach_grads(const LlamaConfig& c, const LoraConfig& lc, LoraBlock& b, const at::Tensor& grad) {
  if (grad.numel() < lora_block_numel(c, lc)) throw Error("lora_block_view: gradient buffer too small for the adapters");
  int64_t off = 0;
  for (LoraGroup* g : {&b.qkv, &b.o, &b.gu, &b.down}) {
    if (!g->defined()) continue;
    g->gA = take(grad, off, g->A.sizes().vec());
    for (auto& p : g->parts) p.gB = take(grad, off, {p.rows, lc.r});
  }
}

LoraBlock lora_block_view(const LlamaConfig& c, const LoraConfig& lc, const at::Tensor& flat, const at::Tensor& grad) {
  LoraBlock b = lora_block_weights(c, lc, flat);
  if (grad.defined()) lora_block_attach_grads(c, lc, b, grad);
  return b;
}

at::Tensor lora_block_fwd(const LlamaConfig& c, const BlockView& w, const LoraBlock& a, const at::Tensor& h,
                          const AttnPlan& plan, LoraSaved* saved) {
  LoraSaved local;
  LoraSaved& s = saved ? *saved : local;
  const bool keep = saved != nullptr;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  auto [xn, rstd1] = ops::rms_norm_fwd(h, w.ln1, c.rms_norm_eps);
  at::Tensor qkv = linear_fwd(xn, w.qkv, at::Tensor(), a.qkv, a.scale, keep ? &s.xa_qkv : nullptr);
  ops::rope_(qkv, plan.cos, plan.sin, nh, nkv, hd, /*inverse=*/false);
  at::Tensor attn = block_attention_fwd(c, qkv, plan, s.base);
  at::Tensor h1 = linear_fwd(attn, w.o, h, a.o, a.scale, keep ? &s.xa_o : nullptr);
  auto [yn, rstd2] = ops::rms_norm_fwd(h1, w.ln2, c.rms_norm_eps);
  at::Tensor gu = linear_fwd(yn, w.gu, at::Tensor(), a.gu, a.scale, keep ? &s.xa_gu : nullptr);
  at::Tensor act = ops::swiglu_fwd(gu);
  at::Tensor out = linear_fwd(act, w.down, h1, a.down, a.scale, keep ? &s.xa_down : nullptr);
  if (saved) {
    // Only what the backward reads: the linears' inputs where an adapter needs them for its A gradient.
    s.base.rstd1 = rstd1;
    s.base.h1 = h1;
    s.base.rstd2 = rstd2;
    s.base.gu = gu;
    if (a.qkv.defined()) s.base.xn = xn;
    if (a.o.defined()) s.base.attn = attn;
    if (a.gu.defined()) s.base.yn = yn;
    if (a.down.defined()) s.base.a = act;
  }
  return out;
}

at::Tensor lora_block_bwd(const LlamaConfig& c, const BlockView& w, const LoraBlock& a, const at::Tensor& h,
                          LoraSaved& s, const at::Tensor& dout, const AttnPlan& plan, const at::Tensor& norm_scratch,
                          bool need_dh) {
  if (s.empty()) throw Error("lora_block_bwd: the block's activations were not saved");
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  BlockSaved& b = s.base;
  at::Tensor da = linear_bwd(dout, w.down, b.a, s.xa_down, a.down, a.scale, a.r);
  b.a = s.xa_down = at::Tensor();
  at::Tensor dgu = ops::swiglu_bwd(b.gu, da);
  da = b.gu = at::Tensor();
  at::Tensor dyn = linear_bwd(dgu, w.gu, b.yn, s.xa_gu, a.gu, a.scale, a.r);
  dgu = b.yn = s.xa_gu = at::Tensor();
  at::Tensor dh1 = ops::rms_norm_bwd(dyn, b.h1, w.ln2, b.rstd2, norm_scratch).add_(dout);
  at::Tensor dattn = linear_bwd(dh1, w.o, b.attn, s.xa_o, a.o, a.scale, a.r);
  at::Tensor dqkv = block_attention_bwd(c, dattn, plan, b);
  dattn = at::Tensor();
  ops::rope_(dqkv, plan.cos, plan.sin, nh, nkv, hd, /*inverse=*/true);
  at::Tensor dxn = linear_bwd(dqkv, w.qkv, b.xn, s.xa_qkv, a.qkv, a.scale, a.r, need_dh);
  at::Tensor dh = need_dh ? ops::rms_norm_bwd(dxn, h, w.ln1, b.rstd1, norm_scratch).add_(dh1) : at::Tensor();
  s.clear();
  return dh;
}

int64_t lora_block_saved_bytes(const LlamaConfig& c, const LoraConfig& lc, int64_t tokens, int64_t elem_size) {
  const int64_t H = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim,
                I = c.intermediate_size, W = q + 2 * kv;
  // Always: qkv (attention's input), attention output, h1, gu; plus fp32 rstd and lse.
  int64_t per_token = elem_size * (W + q + H + 2 * I) + 4 * (2 + c.num_attention_heads);
  auto any = [&](std::initializer_list<const char*> ms) {
    for (const char* m : ms)
      if (lc.targets(m)) return true;
    return false;
  };
  if (any({"q_proj", "k_proj", "v_proj"})) per_token += elem_size * (H + 3 * lc.r);
  if (any({"o_proj"})) per_token += elem_size * (q + lc.r);
  if (any({"gate_proj", "up_proj"})) per_token += elem_size * (H + 2 * lc.r);
  if (any({"down_proj"})) per_token += elem_size * (I + lc.r);
  return tokens * per_token;
}

HeadResult lora_head_loss(const LlamaConfig& c, const at::Tensor& h, const at::Tensor& norm_w, const at::Tensor& head_w,
                          const at::Tensor& targets, double scale, const at::Tensor& norm_scratch, int64_t chunk_rows) {
  const int64_t N = h.size(0);
  auto [hn, rstd] = ops::rms_norm_fwd(h, norm_w, c.rms_norm_eps);
  at::Tensor dhn = at::empty_like(hn);
  at::Tensor loss = at::zeros({}, h.options().dtype(at::kFloat));
  const int64_t chunk = std::max<int64_t>(1, chunk_rows);
  for (int64_t start = 0; start < N; start += chunk) {
    const int64_t n = std::min(chunk, N - start);
    at::Tensor dlogits = at::mm(hn.narrow(0, start, n), head_w.t());
    loss.add_(ops::cross_entropy_fwd_bwd_(dlogits, targets.narrow(0, start, n), scale));
    at::Tensor dx = dhn.narrow(0, start, n);
    at::mm_out(dx, dlogits, head_w);
  }
  at::Tensor dh = ops::rms_norm_bwd(dhn, h, norm_w, rstd, norm_scratch);
  return {loss, dh};
}

void lora_init(const LoraConfig& lc, const std::vector<LoraParamSpec>& specs, std::vector<at::Tensor>& tensors,
               at::Generator& gen) {
  at::NoGradGuard no_grad;
  if (specs.size() != tensors.size()) throw Error("lora_init: one tensor per adapter expected");
  for (size_t i = 0; i < tensors.size(); ++i) {
    at::Tensor& t = tensors[i];
    if (!specs[i].is_a) {
      t.zero_();
      continue;
    }
    if (lc.init == "gaussian") {
      t.normal_(0.0, 1.0 / static_cast<double>(lc.r), gen);
    } else {
      // kaiming_uniform_(a=sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in).
      const double bound = 1.0 / std::sqrt(static_cast<double>(t.size(1)));
      t.uniform_(-bound, bound, gen);
    }
  }
}

at::Tensor lora_merge(const at::Tensor& w, const at::Tensor& a, const at::Tensor& b, double scale) {
  // In full fp32: a GPU's fp32 GEMM may run in TF32 (10-bit mantissa), which would put errors of ~1e-3 of
  // B A into the merged weights; the merge is tiny beside training, so it runs on the CPU.
  at::Tensor wf = w.to(at::kCPU, at::kFloat);
  return wf.addmm(b.to(at::kCPU, at::kFloat), a.to(at::kCPU, at::kFloat), 1, scale);
}

}  // namespace air::train
