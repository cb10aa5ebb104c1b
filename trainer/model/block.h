// A Llama decoder block's forward and backward written out by hand (as llm.c does), on weights that are
// views into one flat buffer: q/k/v are one GEMM (their rows lie back to back), gate/up one GEMM, the
// residual adds ride in the GEMM epilogues, and weight gradients are accumulated by the GEMMs straight
// into a flat gradient buffer (addmm with beta = 1: no per-parameter gradient tensors, no copies). The
// elementwise chains are trainer/model/ops.h; attention is the library's fused kernel. The autograd reference
// of the same math is model.h's block_forward, which the tests compare against.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "trainer/model/fp8_linear.h"
#include "trainer/model/llama_config.h"

namespace air::train {

// The block's weights as views into a flat buffer laid out in BlockWeights::names(c) order: Llama's six
// (q/k/v and gate/up fused) and the family's optional ones after them (undefined where the config has none).
struct BlockView {
  at::Tensor ln1, qkv, o, ln2, gu, down;
  at::Tensor qkv_b;               // qkv_bias: [W] (q, k, v biases back to back)
  at::Tensor q_norm, k_norm;      // qk_norm: [head_dim]
  at::Tensor post_attn, post_ffn;  // sandwich_norm: [H]
};
BlockView block_view(const LlamaConfig& c, const at::Tensor& flat);
int64_t block_numel(const LlamaConfig& c);
// [offset, length) of the four linears' weights (qkv, o, gu, down) in block_view's flat layout: the parts of
// a block's gradient that block_bwd with write_grads writes whole (the norms' gradients are always added).
std::vector<std::pair<int64_t, int64_t>> block_linear_ranges(const LlamaConfig& c);

// What attention needs for one micro-batch, shared by every block: rotary tables per token and the
// sequence structure (plain causal rows, or packed rows of several examples).
struct AttnPlan {
  int64_t B = 0, T = 0;
  at::Tensor cos, sin;  // [B * T, rotary_dim], compute dtype
  double scale = 0;     // the scores' scale (0: 1 / sqrt(head_dim))
  int64_t window = 0;   // sliding window (0: none); a window shorter than T is in the mask
  // Packed rows: on CUDA, variable-length flash attention over the examples (cu_seqlens int32 [S + 1]);
  // elsewhere a boolean mask [B, 1, T, T] (true = may attend).
  at::Tensor cu_seqlens;
  int64_t max_seqlen = 0;
  at::Tensor mask;
};
// positions: int64 [B, T]; segments: int [B, T] example number in its row (0 = padding), undefined for
// plain causal rows. cos/sin come from the model's inverse frequencies (fp32 [rotary_dim / 2]), times
// cos_scale (longrope's attention factor). window: a sliding window (a query sees itself and the window - 1
// tokens before it), which puts the plan on the masked kernels when shorter than T, as does a score scale
// other than 1 / sqrt(head_dim) with packed rows (the variable-length kernel is called without either).
AttnPlan make_attn_plan(const LlamaConfig& c, const at::Tensor& inv_freq, const at::Tensor& positions,
                        const at::Tensor& segments, at::ScalarType dtype, at::Device device, int64_t window = 0,
                        double cos_scale = 1.0);
class Rope;
// The plans of a micro-batch: one for the full-attention layers and, where the config has sliding layers, one
// for them (their window, and Gemma 3's local RoPE base). layer(c, l) is block l's.
struct AttnPlans {
  AttnPlan full, sliding;
  const AttnPlan& layer(const LlamaConfig& c, int64_t l) const { return c.is_sliding(l) ? sliding : full; }
};
AttnPlans make_attn_plans(const LlamaConfig& c, const Rope& rope, const at::Tensor& positions,
                          const at::Tensor& segments, at::ScalarType dtype, at::Device device);

// The embeddings of ids ([N]) times the config's embed_scale (rounded to the weights' dtype, as transformers),
// and the backward: adds dh * embed_scale into g_embed's rows.
at::Tensor embed_fwd(const LlamaConfig& c, const at::Tensor& embed_w, const at::Tensor& ids);
void embed_bwd(const LlamaConfig& c, const at::Tensor& g_embed, const at::Tensor& ids, const at::Tensor& dh);

// `precision: fp8`: the block's four linears in e4m3 (trainer/model/fp8_linear.h), their weights quantised
// once per step (both operands of each: forward and input gradient).
struct Fp8Block {
  fp8::Scaling scaling = fp8::Scaling::kTensorwise;
  fp8::Weight qkv, o, gu, down;
};
Fp8Block quantize_block(const BlockView& w, fp8::Scaling s);

// Activations a block's backward needs. Empty when the block will be recomputed. In FP8 the inputs of the
// linears (xn, attn, yn, a) are kept only as the quantised transposed operands their weight gradients take.
struct BlockSaved {
  at::Tensor xn, rstd1, attn_in, attn_out, attn, lse, rng, h1, yn, rstd2, gu, a;
  // qk_norm: q and k heads before their norm ([N * heads, head_dim]) and the norms' rstd; sandwich_norm: the
  // attention projection's and the MLP's outputs before their norms, and those norms' rstd.
  at::Tensor q_pre, rstd_q, k_pre, rstd_k, ao, rstd_ao, mo, rstd_mo;
  // Dense rows: attention's q, k and v as the leaves of its local autograd graph (views of attn_in, not
  // counted in bytes()).
  at::Tensor attn_q, attn_k, attn_v;
  fp8::Operand q_xn, q_attn, q_yn, q_a;
  bool empty() const { return !rstd1.defined(); }
  void clear() { *this = BlockSaved(); }
  int64_t bytes() const;
};

// h: [N, H] (N = B * T) in the compute dtype. Returns the block's output; fills `saved` when given. With
// `fp8` the four linears run in FP8 (when N and the sizes suit _scaled_mm; else in the compute dtype).
at::Tensor block_fwd(const LlamaConfig& c, const BlockView& w, const at::Tensor& h, const AttnPlan& plan,
                     BlockSaved* saved, const Fp8Block* fp8 = nullptr);
// dout: gradient of the block's output. Adds the weight gradients into `g` (views of a flat gradient
// buffer in the compute dtype), frees `saved`, and returns the gradient of the block's input h.
// `fp8` must be what block_fwd saw. grad_amax (FP8 tensorwise; optional): on entry, when defined, max |dout|
// as the block above computed it (one fp32 element), so dout's cast needs no amax pass; on return, the
// returned gradient's amax (undefined where none was computed). Pass the same variable down the blocks.
// write_grads: the four linears' weight gradients are written (GEMM beta 0: what `g` held there is neither
// read nor kept) instead of added; the step's first micro-batch, so that nothing has to zero them first
// (block_linear_ranges; the norms' gradients are added either way).
at::Tensor block_bwd(const LlamaConfig& c, const BlockView& w, const BlockView& g, const at::Tensor& h,
                     BlockSaved& saved, const at::Tensor& dout, const AttnPlan& plan, const Fp8Block* fp8 = nullptr,
                     at::Tensor* grad_amax = nullptr, bool write_grads = false);
// block_fwd's attention on the fused [N, W] q/k/v projection (RoPE applied), keeping in `s` what
// block_attention_bwd needs; for block variants built from the same pieces (trainer/model/lora_block.h).
at::Tensor block_attention_fwd(const LlamaConfig& c, const at::Tensor& qkv, const AttnPlan& plan, BlockSaved& s);
// The backward returns the gradient of the q/k/v projection's output before RoPE (the inverse rotation applied).
at::Tensor block_attention_bwd(const LlamaConfig& c, const at::Tensor& dattn, const AttnPlan& plan, BlockSaved& s);
// The family's pieces around the block's GEMMs, shared with the LoRA block (trainer/model/lora_block.h):
// - the weight an RMSNorm multiplies by: w, or 1 + w (norm_plus_one);
at::Tensor block_norm_weight(const LlamaConfig& c, const at::Tensor& w);
// - the q/k/v projection's output made attention's input, in place: bias, per-head q/k norm, RoPE (keeps in
//   `s` what the backward needs when keep);
void qkv_prepare_fwd(const LlamaConfig& c, const BlockView& w, at::Tensor& qkv, const AttnPlan& plan, BlockSaved& s,
                     bool keep);
// - its backward after block_attention_bwd (RoPE's inverse done there): the q/k norms' backward in place on
//   dqkv, and the bias's and norms' gradients added into g (undefined: frozen);
void qkv_prepare_bwd(const LlamaConfig& c, const BlockView& w, const BlockView* g, at::Tensor& dqkv, BlockSaved& s);
// - the gated activation on [N, 2I] = [gate | up]: silu(gate) * up, or gelu_tanh(gate) * up; and its backward.
at::Tensor glu_fwd(const LlamaConfig& c, const at::Tensor& gu, const at::Tensor& amax = {});
at::Tensor glu_bwd(const LlamaConfig& c, const at::Tensor& gu, const at::Tensor& da, const at::Tensor& amax = {});

// Bytes a block keeps for backward at N tokens (what block_fwd saves), for choosing recomputation.
int64_t block_saved_bytes(const LlamaConfig& c, int64_t tokens, int64_t elem_size);

// The final norm, the LM head (with the config's final soft-capping) and the cross-entropy, forward and
// backward at once, in row chunks so the [N, vocab] logits are never whole in memory: the one head of full
// fine-tuning and LoRA. targets: int64 [N] (-100 = no target). Returns the summed loss (fp32 0-dim, on the
// device) and the gradient of h, with d(loss * scale); adds the norm weight's and the head's gradients into
// g_norm and g_head, each undefined when frozen (LoRA: neither is computed). dh_out: where dh goes (ops'
// `out`: LoRA's lora_grad_out), or undefined.
struct HeadResult {
  at::Tensor loss_sum, dh;
};
HeadResult head_loss_fwd_bwd(const LlamaConfig& c, const at::Tensor& h, const at::Tensor& norm_w,
                             const at::Tensor& head_w, const at::Tensor& targets, double scale,
                             const at::Tensor& g_norm, const at::Tensor& g_head, int64_t chunk_rows,
                             const at::Tensor& dh_out = {});
// The head's logits [N, vocab] (compute dtype, soft-capped), whole: for checks and evaluation of small batches.
at::Tensor head_logits(const LlamaConfig& c, const at::Tensor& h, const at::Tensor& norm_w, const at::Tensor& head_w);
// The rows of logits per chunk for a vocabulary: about 1 GiB of bf16 logits at a time.
int64_t head_chunk_rows(const LlamaConfig& c);

}  // namespace air::train
