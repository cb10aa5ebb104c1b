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

// The block's weights as views into a flat buffer laid out in BlockWeights::names() order.
struct BlockView {
  at::Tensor ln1, qkv, o, ln2, gu, down;
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
  at::Tensor cos, sin;  // [B * T, head_dim], compute dtype
  // Packed rows: on CUDA, variable-length flash attention over the examples (cu_seqlens int32 [S + 1]);
  // elsewhere a boolean mask [B, 1, T, T] (true = may attend).
  at::Tensor cu_seqlens;
  int64_t max_seqlen = 0;
  at::Tensor mask;
};
// positions: int64 [B, T]; segments: int [B, T] example number in its row (0 = padding), undefined for
// plain causal rows. cos/sin come from the model's inverse frequencies (fp32 [head_dim / 2]).
AttnPlan make_attn_plan(const LlamaConfig& c, const at::Tensor& inv_freq, const at::Tensor& positions,
                        const at::Tensor& segments, at::ScalarType dtype, at::Device device);

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
// Bytes a block keeps for backward at N tokens (what block_fwd saves), for choosing recomputation.
int64_t block_saved_bytes(const LlamaConfig& c, int64_t tokens, int64_t elem_size);

// The final norm, the LM head and the cross-entropy, forward and backward at once, in row chunks so the
// [N, vocab] logits are never whole in memory. targets: int64 [N] (-100 = no target). Returns the summed
// loss (fp32 0-dim, on the device) and the gradient of h, with d(loss * scale); adds the norm weight's and
// the head's gradients into g_norm and g_head.
struct HeadResult {
  at::Tensor loss_sum, dh;
};
HeadResult head_loss_fwd_bwd(const LlamaConfig& c, const at::Tensor& h, const at::Tensor& norm_w,
                             const at::Tensor& head_w, const at::Tensor& targets, double scale,
                             const at::Tensor& g_norm, const at::Tensor& g_head, int64_t chunk_rows);

}  // namespace air::train
