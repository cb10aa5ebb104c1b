// A Llama decoder block's forward and backward written out by hand (as llm.c does), on weights that are
// views into one flat buffer: q/k/v are one GEMM (their rows lie back to back), gate/up one GEMM, the
// residual adds ride in the GEMM epilogues, and weight gradients are accumulated by the GEMMs straight
// into a flat gradient buffer (addmm with beta = 1: no per-parameter gradient tensors, no copies). The
// elementwise chains are trainer/model/ops.h; attention is the library's fused kernel. The autograd reference
// of the same math is model.h's block_forward, which the tests compare against.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>

#include "trainer/model/llama_config.h"

namespace air::train {

// The block's weights as views into a flat buffer laid out in BlockWeights::names() order.
struct BlockView {
  at::Tensor ln1, qkv, o, ln2, gu, down;
};
BlockView block_view(const LlamaConfig& c, const at::Tensor& flat);
int64_t block_numel(const LlamaConfig& c);

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

// Activations a block's backward needs. Empty when the block will be recomputed.
struct BlockSaved {
  at::Tensor xn, rstd1, attn_in, attn_out, attn, lse, rng, h1, yn, rstd2, gu, a;
  bool empty() const { return !xn.defined(); }
  void clear() { *this = BlockSaved(); }
  int64_t bytes() const;
};

// h: [N, H] (N = B * T) in the compute dtype. Returns the block's output; fills `saved` when given.
at::Tensor block_fwd(const LlamaConfig& c, const BlockView& w, const at::Tensor& h, const AttnPlan& plan,
                     BlockSaved* saved);
// dout: gradient of the block's output. Adds the weight gradients into `g` (views of a flat gradient
// buffer in the compute dtype), frees `saved`, and returns the gradient of the block's input h.
at::Tensor block_bwd(const LlamaConfig& c, const BlockView& w, const BlockView& g, const at::Tensor& h,
                     BlockSaved& saved, const at::Tensor& dout, const AttnPlan& plan);
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
