// LoRA on the hand-written block: the frozen base's input-gradient GEMMs only, the adapters grouped by
// input (trainer/model/lora_block.h).
#include "trainer/model/lora_block.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>

#include "core/base/error.h"
#include "trainer/model/model.h"
#include "trainer/model/ops.h"

namespace air::train {
namespace {

struct Group {
  const char* name;
  std::vector<std::string> modules;
  std::vector<int64_t> rows;  // output rows of each module
  int64_t in;
};

// The four groups of block linears that share an input, with their modules' output sizes. Phi-3's
// checkpoint fuses q/k/v into self_attn.qkv_proj and gate/up into mlp.gate_up_proj, and PEFT adapts those
// as one module each: one A [r, H] and one B spanning the fused rows (q | k | v, gate | up, the rows' order
// in the base's qkv and gu matrices too).
std::vector<Group> groups(const LlamaConfig& c) {
  const int64_t H = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim,
                I = c.intermediate_size;
  if (c.fused_checkpoint)
    return {{"qkv", {"qkv_proj"}, {q + 2 * kv}, H},
            {"o", {"o_proj"}, {H}, q},
            {"gu", {"gate_up_proj"}, {2 * I}, H},
            {"down", {"down_proj"}, {H}, I}};
  return {{"qkv", {"q_proj", "k_proj", "v_proj"}, {q, kv, kv}, H},
          {"o", {"o_proj"}, {H}, q},
          {"gu", {"gate_proj", "up_proj"}, {I, I}, H},
          {"down", {"down_proj"}, {H}, I}};
}

// A group's output rows (all its modules').
int64_t out_rows(const Group& g) {
  int64_t n = 0;
  for (int64_t r : g.rows) n += r;
  return n;
}

at::Tensor take(const at::Tensor& flat, int64_t& off, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  at::Tensor t = flat.narrow(0, off, n).view(shape);
  off += n;
  return t;
}

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// The family's optional block tensors (q/k/v bias, q/k norms, sandwich norms), after the base's matrices.
int64_t extras_numel(const LlamaConfig& c) {
  const int64_t W = (c.num_attention_heads + 2 * c.num_key_value_heads) * c.head_dim;
  return (c.qkv_bias ? W : 0) + (c.qk_norm ? 2 * c.head_dim : 0) + (c.sandwich_norm ? 2 * c.hidden_size : 0);
}

bool qkv_dgrad_fold() {
  const char* v = std::getenv("AIR_TRAIN_LORA_QKV_DGRAD");
  return !(v && std::string(v) == "0");
}

// An uninitialised [rows, cols] matrix whose rows start at multiples of `align` elements.
at::Tensor aligned_empty(int64_t rows, int64_t cols, int64_t align, const at::TensorOptions& o) {
  return at::empty({rows, round_up(cols, align)}, o).narrow(1, 0, cols);
}

// The module count and the rows of each group's adapters (k r), or 0 where the group has none.
int64_t group_kr(const Group& g, const LoraConfig& lc) {
  int64_t k = 0;
  for (const auto& m : g.modules) k += lc.targets(m) ? 1 : 0;
  return k * lc.r;
}

// x with module j's dropout mask applied.
at::Tensor dropped(const at::Tensor& x, const LoraBlock& b, const LoraGroup& g, int64_t j) {
  // x * mask, then the scale: rounded once to x's dtype after each, as torch's dropout on a bf16 input.
  return (x * lora_dropout_mask(x.sizes(), x.options(), b.dropout, lora_mask_seed(b, g, j))).mul_(1.0 / (1.0 - b.dropout));
}

// x A^T [N, k r]: one GEMM for the group, or with dropout one per module (each its own mask).
at::Tensor adapter_in(const at::Tensor& x, const LoraBlock& b, const LoraGroup& g) {
  if (b.dropout <= 0) return ops::gemm(x, g.A.t());
  const int64_t r = b.r, k = g.A.size(0) / r;
  at::Tensor t = at::empty({x.size(0), k * r}, x.options());
  for (int64_t j = 0; j < k; ++j) t.narrow(1, j * r, r).copy_(at::mm(dropped(x, b, g, j), g.A.narrow(0, j * r, r).t()));
  return t;
}

// dA += d(xA^T)^T x (with dropout: the dropped input of each module, its mask drawn again).
void adapter_grad_a(const at::Tensor& dxa, const at::Tensor& x, const LoraBlock& b, const LoraGroup& g) {
  if (b.dropout <= 0) {
    ops::gemm_into(g.gA, dxa.t(), x, g.gA);
    return;
  }
  const int64_t r = b.r, k = g.A.size(0) / r;
  for (int64_t j = 0; j < k; ++j) g.gA.narrow(0, j * r, r).addmm_(dxa.narrow(1, j * r, r).t(), dropped(x, b, g, j));
}

}  // namespace

uint64_t lora_mask_seed(const LoraBlock& b, const LoraGroup& g, int64_t j) {
  return b.dropout_seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(g.group) * 8 + static_cast<uint64_t>(j) + 1;
}

at::Tensor lora_dropout_mask(at::IntArrayRef sizes, const at::TensorOptions& o, double p, uint64_t seed) {
  // A private generator (a copy of the device's default one, reseeded): the default generator's sequence,
  // which the rest of training may use, is not advanced.
  at::Generator gen = at::globalContext().defaultGenerator(o.device()).clone();
  gen.set_current_seed(seed);
  return at::empty(sizes, o).bernoulli_(1.0 - p, gen);
}

at::Tensor lora_folded_input(const LoraGroup& g, int64_t rows, int64_t in, const at::TensorOptions& o) {
  if (!g.wk.defined()) return at::Tensor();
  return aligned_empty(rows, in + g.A.size(0), g.align, o);
}

at::Tensor lora_grad_out(int64_t rows, int64_t hidden, int64_t room, int64_t align, const at::TensorOptions& o) {
  if (room <= 0) return at::Tensor();
  return aligned_empty(rows, hidden + room, align, o).narrow(1, 0, hidden);
}

int64_t lora_grad_room(const LoraBlock& a) { return a.down.wn.defined() ? a.down.A.size(0) : 0; }

// The frozen base's GEMMs without a residual (the folded forwards and every input gradient) go through
// ops::gemm: per shape the fastest of cuBLASLt's candidates and ATen's at::mm, timed once (at the 8B block's
// shapes cuBLASLt's won by 5-21% at four of six, at::mm by 9-10% at two: air-train-check --gemm-speed).
// AIR_TRAIN_LORA_BASE_LT=0: at::mm everywhere (the bench's comparison, `baseaten`).
static bool base_lt() {
  static const bool on = [] {
    const char* v = std::getenv("AIR_TRAIN_LORA_BASE_LT");
    return !(v && std::string(v) == "0");
  }();
  return on;
}
static at::Tensor base_mm(const at::Tensor& a, const at::Tensor& b) { return base_lt() ? ops::gemm(a, b) : at::mm(a, b); }
static void base_mm_out(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  if (base_lt()) {
    ops::gemm_into(out, a, b);
  } else {
    at::mm_out(const_cast<at::Tensor&>(out), a, b);
  }
}

// AIR_TRAIN_LORA_SUM_FIRST=0: the unfolded adapters' forward with a residual (o and down) as the base GEMM on a
// copy of the residual, then the low-rank product added (the layout before 2026-12-04 evening; the bench's
// comparison).
static bool sum_first_off() {
  static const bool off = [] {
    const char* v = std::getenv("AIR_TRAIN_LORA_SUM_FIRST");
    return v && std::string(v) == "0";
  }();
  return off;
}

// y = x W^T (+ residual) + (x A^T) (s B)^T; keeps x A^T in *xa and the input the backward reads in *xs.
at::Tensor lora_linear_fwd(const at::Tensor& x, const at::Tensor& w, const at::Tensor& residual, const LoraBlock& b,
                           const LoraGroup& g, at::Tensor* xa, at::Tensor* xs, const at::Tensor& xcat) {
  if (xs) *xs = x;
  if (!g.defined()) return residual.defined() ? at::addmm(residual, x, w.t()) : at::mm(x, w.t());
  if (g.wk.defined()) {
    // [x | x A^T] @ [W | s B]^T: the low-rank product is added inside the base GEMM's reduction. x is already
    // the left part of xcat when its producer wrote it there; x A^T is written straight into the right part.
    const int64_t in = x.size(1), kr = g.A.size(0);
    at::Tensor cat = xcat;
    if (cat.defined()) {
      if (cat.size(1) != in + kr || cat.narrow(1, 0, in).data_ptr() != x.data_ptr() || cat.stride(0) != x.stride(0))
        throw Error("lora_linear_fwd: x is not the left part of the folded input buffer");
    } else {
      cat = aligned_empty(x.size(0), in + kr, g.align, x.options());
      cat.narrow(1, 0, in).copy_(x);
    }
    at::Tensor t = cat.narrow(1, in, kr);
    if (b.dropout <= 0) {
      ops::gemm_into(t, x, g.A.t());
    } else {
      t.copy_(adapter_in(x, b, g));
    }
    if (xa) *xa = t;
    if (xs) *xs = cat.narrow(1, 0, in);
    return residual.defined() ? at::addmm(residual, cat, g.wk.t()) : base_mm(cat, g.wk.t());
  }
  at::Tensor t = adapter_in(x, b, g);
  at::Tensor y;
  if (residual.defined() && !sum_first_off()) {
    // residual + (x A^T)(s B)^T first, in one thin GEMM that reads the residual where it is (this pass replaces
    // the copy of the residual that addmm makes), then the base GEMM accumulates x W^T into it in place: one
    // pass over y less than adding the low-rank product afterwards.
    y = at::empty({x.size(0), w.size(0)}, x.options());
    ops::gemm_into(y, t, g.B.t(), residual);
    y.addmm_(x, w.t());
  } else {
    // The base GEMM stays ATen's: with the residual, cuBLASLt's algorithms (C read in place, no copy into y)
    // measured 2.6 ms a step slower than cuBLAS's copy + GEMM at 8B (docs/performance.md, 2026-12-04 evening).
    y = residual.defined() ? at::addmm(residual, x, w.t()) : at::mm(x, w.t());
    ops::gemm_into(y, t, g.B.t(), y);
  }
  if (xa) *xa = t;
  return y;
}

// dx = dy W + d(xa) A (with dropout: each module's part through its mask and scale), with d(xa) = dy (s B);
// adds dB = s dy^T xa (per module) and dA = d(xa)^T x. The base weight's gradient dy^T x is not computed;
// with need_dx false neither is dx (undefined).
at::Tensor lora_linear_bwd(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& x, const at::Tensor& xa,
                           const LoraBlock& b, const LoraGroup& g, bool need_dx, bool dy_wide) {
  if (!g.defined()) return need_dx ? base_mm(dy, w) : at::Tensor();
  const double s = b.scale;
  const int64_t r = b.r, kr = g.A.size(0), in = g.A.size(1);
  at::Tensor dx, dxa;
  at::Tensor dcat_n;  // down folded: [dy | d(xa)], then @ [W ; A]
  if (need_dx && g.wn.defined() && b.dropout <= 0) {
    const int64_t out = dy.size(1);
    if (dy_wide) {
      // The caller's promise: dy's rows have room for kr more columns, which nothing reads.
      if (dy.dim() != 2 || dy.stride(1) != 1 || dy.stride(0) < out + kr)
        throw Error("lora_linear_bwd: dy has no room for the adapter columns");
      dcat_n = dy.as_strided({dy.size(0), out + kr}, {dy.stride(0), 1});
    } else {
      dcat_n = aligned_empty(dy.size(0), out + kr, g.align, dy.options());
      dcat_n.narrow(1, 0, out).copy_(dy);
    }
    dxa = dcat_n.narrow(1, out, kr);
    ops::gemm_into(dxa, dy, g.B);
  } else if (need_dx && g.wk.defined() && g.wk_dgrad) {
    at::Tensor dcat = aligned_empty(dy.size(0), in + kr, g.align, dy.options());
    base_mm_out(dcat, dy, g.wk);  // [dy W | dy s B]: one pass over dy
    dx = dcat.narrow(1, 0, in);
    dxa = dcat.narrow(1, in, kr);
  } else {
    dxa = ops::gemm(dy, g.B);
    if (need_dx && (!g.wn.defined() || b.dropout > 0)) dx = base_mm(dy, w);
  }
  for (const auto& p : g.parts) ops::gemm_into(p.gB, dy.narrow(1, p.row, p.rows).t(), xa.narrow(1, p.col, r), p.gB, s, 1);
  adapter_grad_a(dxa, x, b, g);
  if (!need_dx) return dx;
  if (b.dropout > 0) {
    // Through each module's dropout: its mask (drawn again) and scale on d(xa_j) A_j.
    for (int64_t j = 0; j < kr / r; ++j)
      dx.add_(dropped(at::mm(dxa.narrow(1, j * r, r), g.A.narrow(0, j * r, r)), b, g, j));
    return dx;
  }
  // [dy | d(xa)] @ [W ; A]: dy W + d(xa) A written once.
  if (dcat_n.defined()) return base_mm(dcat_n, g.wn);
  ops::gemm_into(dx, dxa, g.A, dx);
  return dx;
}

const char* lora_parent(const std::string& module) {
  return module == "gate_proj" || module == "up_proj" || module == "gate_up_proj" || module == "down_proj" ? "mlp"
                                                                                                          : "self_attn";
}

std::vector<std::string> lora_block_modules(const LlamaConfig& c) {
  std::vector<std::string> out;
  for (const Group& g : groups(c)) out.insert(out.end(), g.modules.begin(), g.modules.end());
  return out;
}

std::vector<std::string> lora_family_targets(const LoraConfig& lc, const LlamaConfig& c, const std::string& where) {
  const std::vector<std::string> family = lora_block_modules(c);
  std::vector<std::string> want = lc.target_modules, all7 = lora_module_names();
  std::sort(want.begin(), want.end());
  std::sort(all7.begin(), all7.end());
  if (want == all7) return family;  // all-linear, or the default: every block linear of the family
  std::string names;
  for (const auto& m : family) names += (names.empty() ? "" : ", ") + m;
  for (const auto& m : lc.target_modules)
    if (std::find(family.begin(), family.end(), m) == family.end())
      throw Error("lora.target_modules: '" + m + "' is not a block linear of model_type '" + c.model_type + "' (" +
                      where + ")" +
                      (c.fused_checkpoint ? ": its checkpoint fuses q/k/v into qkv_proj and gate/up into gate_up_proj, "
                                            "and PEFT adapts those whole"
                                          : ""),
                  "use some of " + names + ", or all-linear");
  std::vector<std::string> out;
  for (const auto& m : family)
    if (lc.targets(m)) out.push_back(m);
  return out;
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

// A folded matrix's row length: in + k r rounded up to `align` (only where the group has adapters).
int64_t folded_ld(int64_t in, int64_t kr, int64_t align) { return kr ? round_up(in + kr, align) : in; }

int64_t lora_base_numel(const LlamaConfig& c, const LoraConfig& lc, int64_t align) {
  const auto gs = groups(c);
  const int64_t H = c.hidden_size, q = c.num_attention_heads * c.head_dim, I = c.intermediate_size;
  const int64_t W = out_rows(gs[0]);
  return 2 * H + H * q + W * folded_ld(H, group_kr(gs[0], lc), align) +
         2 * I * folded_ld(H, group_kr(gs[2], lc), align) + (H + group_kr(gs[3], lc)) * I + extras_numel(c);
}

LoraBaseView lora_base_view(const LlamaConfig& c, const LoraConfig& lc, const at::Tensor& flat, int64_t align) {
  if (flat.numel() < lora_base_numel(c, lc, align)) throw Error("lora_base_view: flat buffer too small for the block");
  const auto gs = groups(c);
  const int64_t H = c.hidden_size, q = c.num_attention_heads * c.head_dim, I = c.intermediate_size;
  const int64_t W = out_rows(gs[0]);
  const int64_t kq = group_kr(gs[0], lc), kg = group_kr(gs[2], lc), kd = group_kr(gs[3], lc);
  int64_t off = 0;
  LoraBaseView v;
  v.align = align;
  v.w.ln1 = take(flat, off, {H});
  v.w.ln2 = take(flat, off, {H});
  v.w.o = take(flat, off, {H, q});
  at::Tensor qkv = take(flat, off, {W, folded_ld(H, kq, align)}).narrow(1, 0, H + kq);
  at::Tensor gu = take(flat, off, {2 * I, folded_ld(H, kg, align)}).narrow(1, 0, H + kg);
  at::Tensor down = take(flat, off, {H + kd, I});
  v.w.qkv = qkv.narrow(1, 0, H);
  v.w.gu = gu.narrow(1, 0, H);
  v.w.down = down.narrow(0, 0, H);
  if (kq) v.qkv_k = qkv;
  if (kg) v.gu_k = gu;
  if (kd) v.down_n = down;
  if (c.qkv_bias) v.w.qkv_b = take(flat, off, {W});
  if (c.qk_norm) {
    v.w.q_norm = take(flat, off, {c.head_dim});
    v.w.k_norm = take(flat, off, {c.head_dim});
  }
  if (c.sandwich_norm) {
    v.w.post_attn = take(flat, off, {H});
    v.w.post_ffn = take(flat, off, {H});
  }
  return v;
}

void lora_base_pack(const LlamaConfig& c, const LoraConfig& lc, const std::vector<at::Tensor>& ws,
                    const at::Tensor& flat, int64_t align) {
  if (ws.size() != BlockWeights::names(c).size())
    throw Error("lora_base_pack: expected the block's " + std::to_string(BlockWeights::names(c).size()) + " weights");
  LoraBaseView v = lora_base_view(c, lc, flat, align);
  // The folded matrices' adapter columns start at zero: lora_block_weights writes only the targeted modules'
  // blocks of the block-diagonal s B, every other entry stays zero (and the alignment padding is never read).
  flat.zero_();
  const int64_t q = ws[1].size(0), kv = ws[2].size(0), I = ws[6].size(0);
  v.w.ln1.copy_(ws[0]);
  v.w.qkv.narrow(0, 0, q).copy_(ws[1]);
  v.w.qkv.narrow(0, q, kv).copy_(ws[2]);
  v.w.qkv.narrow(0, q + kv, kv).copy_(ws[3]);
  v.w.o.copy_(ws[4]);
  v.w.ln2.copy_(ws[5]);
  v.w.gu.narrow(0, 0, I).copy_(ws[6]);
  v.w.gu.narrow(0, I, I).copy_(ws[7]);
  v.w.down.copy_(ws[8]);
  size_t i = 9;
  if (c.qkv_bias) {
    v.w.qkv_b.narrow(0, 0, q).copy_(ws[i++]);
    v.w.qkv_b.narrow(0, q, kv).copy_(ws[i++]);
    v.w.qkv_b.narrow(0, q + kv, kv).copy_(ws[i++]);
  }
  for (at::Tensor* t : {&v.w.q_norm, &v.w.k_norm, &v.w.post_attn, &v.w.post_ffn})
    if (t->defined()) t->copy_(ws[i++]);
}

LoraBlock lora_block_weights(const LlamaConfig& c, const LoraConfig& lc, const at::Tensor& flat,
                             const LoraBaseView* base) {
  if (flat.numel() < lora_block_numel(c, lc)) throw Error("lora_block_view: flat buffer too small for the adapters");
  LoraBlock b;
  b.r = lc.r;
  b.scale = lc.scaling();
  b.dropout = lc.dropout;
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
    const int64_t out = out_rows(g);
    LoraGroup& lg = *dst[gi];
    lg.group = static_cast<int>(gi);
    lg.A = take(flat, off, {k * lc.r, g.in});
    const at::Tensor* wk = !base ? nullptr : gi == 0 ? &base->qkv_k : gi == 2 ? &base->gu_k : nullptr;
    if (base) lg.align = base->align;
    // s B block-diagonal: each targeted module's B scaled into its block (one kernel per module); the other
    // entries are zero (the folded ones since lora_base_pack).
    const bool whole = k == 1 && static_cast<int64_t>(g.rows[mods[0]]) == out;  // o, down: B is one module's
    if (wk && wk->defined()) {
      lg.wk = *wk;
      lg.wk_dgrad = gi == 2 || qkv_dgrad_fold();
      lg.B = wk->narrow(1, g.in, k * lc.r);
    } else if (!whole) {
      lg.B = at::zeros({out, k * lc.r}, flat.options());
    }
    if (base && gi == 3 && base->down_n.defined()) {
      lg.wn = base->down_n;
      lg.wn.narrow(0, out, k * lc.r).copy_(lg.A);
    }
    for (int64_t j = 0; j < k; ++j) {
      const size_t i = mods[static_cast<size_t>(j)];
      int64_t row = 0;
      for (size_t m = 0; m < i; ++m) row += g.rows[m];
      at::Tensor bm = take(flat, off, {g.rows[i], lc.r});
      if (lg.B.defined()) {
        at::Tensor dstb = lg.B.narrow(0, row, g.rows[i]).narrow(1, j * lc.r, lc.r);
        at::mul_out(dstb, bm, at::Scalar(b.scale));
      } else {
        lg.B = bm.mul(b.scale);
      }
      LoraGroup::Part p;
      p.row = row;
      p.rows = g.rows[i];
      p.col = j * lc.r;
      lg.parts.push_back(p);
    }
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
  const int64_t N = h.size(0), H = h.size(1);
  // Folded q/k/v and gate/up: the norms write straight into the left part of their GEMM's input [x | x A^T].
  const at::Tensor xcat = lora_folded_input(a.qkv, N, H, h.options());
  auto [xn, rstd1] = ops::rms_norm_fwd(h, block_norm_weight(c, w.ln1), c.rms_norm_eps, {},
                                       xcat.defined() ? xcat.narrow(1, 0, H) : at::Tensor());
  at::Tensor xn_in, attn_in, yn_in, act_in;  // what the backward reads as each group's input
  at::Tensor qkv = lora_linear_fwd(xn, w.qkv, at::Tensor(), a, a.qkv, keep ? &s.xa_qkv : nullptr, &xn_in, xcat);
  xn = at::Tensor();
  qkv_prepare_fwd(c, w, qkv, plan, s.base, keep);  // bias, q/k norm, RoPE
  at::Tensor attn = block_attention_fwd(c, qkv, plan, s.base);
  // Sandwich norms (Gemma 3): h + norm(attn @ o^T), the residual added after the norm.
  const bool sandwich = c.sandwich_norm;
  at::Tensor h1 = lora_linear_fwd(attn, w.o, sandwich ? at::Tensor() : h, a, a.o, keep ? &s.xa_o : nullptr, &attn_in);
  attn = at::Tensor();
  at::Tensor ao, rstd_ao;
  if (sandwich) {
    ao = h1;
    std::tie(h1, rstd_ao) = ops::rms_norm_fwd(ao, block_norm_weight(c, w.post_attn), c.rms_norm_eps);
    h1.add_(h);
  }
  const at::Tensor ycat = lora_folded_input(a.gu, N, H, h.options());
  auto [yn, rstd2] = ops::rms_norm_fwd(h1, block_norm_weight(c, w.ln2), c.rms_norm_eps, {},
                                       ycat.defined() ? ycat.narrow(1, 0, H) : at::Tensor());
  at::Tensor gu = lora_linear_fwd(yn, w.gu, at::Tensor(), a, a.gu, keep ? &s.xa_gu : nullptr, &yn_in, ycat);
  yn = at::Tensor();
  at::Tensor act = glu_fwd(c, gu);
  at::Tensor out = lora_linear_fwd(act, w.down, sandwich ? at::Tensor() : h1, a, a.down, keep ? &s.xa_down : nullptr,
                                   &act_in);
  act = at::Tensor();
  at::Tensor mo, rstd_mo;
  if (sandwich) {
    mo = out;
    std::tie(out, rstd_mo) = ops::rms_norm_fwd(mo, block_norm_weight(c, w.post_ffn), c.rms_norm_eps);
    out.add_(h1);
  }
  if (saved) {
    s.base.ao = ao;
    s.base.rstd_ao = rstd_ao;
    s.base.mo = mo;
    s.base.rstd_mo = rstd_mo;
    // Only what the backward reads: the linears' inputs where an adapter needs them for its A gradient.
    s.base.rstd1 = rstd1;
    s.base.h1 = h1;
    s.base.rstd2 = rstd2;
    s.base.gu = gu;
    if (a.qkv.defined()) s.base.xn = xn_in;
    if (a.o.defined()) s.base.attn = attn_in;
    if (a.gu.defined()) s.base.yn = yn_in;
    if (a.down.defined()) s.base.a = act_in;
  }
  return out;
}

at::Tensor lora_block_bwd(const LlamaConfig& c, const BlockView& w, const LoraBlock& a, const at::Tensor& h,
                          LoraSaved& s, const at::Tensor& dout, const AttnPlan& plan,
                          bool need_dh, bool dout_wide) {
  if (s.empty()) throw Error("lora_block_bwd: the block's activations were not saved");
  BlockSaved& b = s.base;
  const bool sandwich = c.sandwich_norm;
  at::Tensor dmo = dout;
  if (sandwich) dmo = ops::rms_norm_bwd(dout, b.mo, block_norm_weight(c, w.post_ffn), b.rstd_mo, {});
  at::Tensor da = lora_linear_bwd(dmo, w.down, b.a, s.xa_down, a, a.down, /*need_dx=*/true, dout_wide && !sandwich);
  dmo = at::Tensor();
  b.a = s.xa_down = at::Tensor();
  at::Tensor dgu = glu_bwd(c, b.gu, da);
  da = b.gu = at::Tensor();
  at::Tensor dyn = lora_linear_bwd(dgu, w.gu, b.yn, s.xa_gu, a, a.gu);
  dgu = b.yn = s.xa_gu = at::Tensor();
  // The residual's gradient is added inside the norm's backward (one pass, not a separate add).
  at::Tensor dh1 = ops::rms_norm_bwd(dyn, b.h1, block_norm_weight(c, w.ln2), b.rstd2, {}, dout);
  dyn = at::Tensor();
  at::Tensor dao = sandwich ? ops::rms_norm_bwd(dh1, b.ao, block_norm_weight(c, w.post_attn), b.rstd_ao, {}) : dh1;
  at::Tensor dattn = lora_linear_bwd(dao, w.o, b.attn, s.xa_o, a, a.o);
  dao = at::Tensor();
  at::Tensor dqkv = block_attention_bwd(c, dattn, plan, b);  // RoPE's inverse applied
  dattn = at::Tensor();
  qkv_prepare_bwd(c, w, nullptr, dqkv, b);  // the q/k norms' backward (frozen: no gradients)
  at::Tensor dxn = lora_linear_bwd(dqkv, w.qkv, b.xn, s.xa_qkv, a, a.qkv, need_dh);
  // dh written with room for the block below's down adapter columns (lora_grad_out), when that one folds.
  at::Tensor dh = need_dh ? ops::rms_norm_bwd(dxn, h, block_norm_weight(c, w.ln1), b.rstd1, {}, dh1, {},
                                              lora_grad_out(h.size(0), h.size(1), lora_grad_room(a), a.down.align, h.options()))
                          : at::Tensor();
  s.clear();
  return dh;
}

int64_t lora_block_saved_bytes(const LlamaConfig& c, const LoraConfig& lc, int64_t tokens, int64_t elem_size) {
  const int64_t H = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim,
                I = c.intermediate_size, W = q + 2 * kv;
  // Always: qkv (attention's input), attention output, h1, gu; plus fp32 rstd and lse.
  int64_t per_token = elem_size * (W + q + H + 2 * I) + 4 * (2 + c.num_attention_heads);
  // Per group with an adapter: its input (for A's gradient) and x A^T.
  for (const Group& g : groups(c))
    if (const int64_t kr = group_kr(g, lc)) per_token += elem_size * (g.in + kr);
  return tokens * per_token;
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
