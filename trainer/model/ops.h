// The elementwise chains between the GEMMs of a Llama block, each with its forward and its hand-written
// backward: RMSNorm, SwiGLU and RoPE. On CUDA builds with our kernels (trainer/cuda/) a CUDA tensor takes
// one fused kernel per call; everywhere else the same math runs as ATen ops (the reference the CUDA
// kernels are tested against, and the CPU path CI runs).
#pragma once
#include <ATen/ATen.h>

#include <tuple>

namespace air::train::ops {

// FP8 (trainer/model/fp8_linear.h) needs the amax of a GEMM input before casting it; the ops that produce
// those inputs compute it as they write them. `amax`, where an op takes one: undefined (none), or one fp32
// element on the output's device, zero or a running max, into which the op folds max |output| (of the
// values as stored, in the output's dtype). fp8::quantize_amax then casts with it.

// `out`, where an op takes one: undefined (the op allocates its output), or an [N, H] matrix of x's dtype to
// write into, whose rows may be strided (unit column stride, row stride a multiple of 8 elements, 16-byte
// aligned): the left columns of a wider buffer, so that a GEMM reading [x | more columns] needs no copy of x.

// y = weight * bf16(x * rstd), rstd = 1 / sqrt(mean(x^2) + eps) in fp32 (transformers' LlamaRMSNorm).
// x: [N, H] contiguous, weight: [H]. Returns y (x's dtype; `out` when given) and rstd (fp32 [N]).
std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(const at::Tensor& x, const at::Tensor& weight, double eps,
                                                const at::Tensor& amax = {}, const at::Tensor& out = {});
// Given dy, returns dx (x's dtype; `out` when given) and adds the weight gradient into dweight (fp32 or
// weight's dtype, [H]; undefined: a frozen weight, whose gradient is not computed). With `residual` ([N, H], x's dtype) returns dx + residual (rounded once to x's dtype,
// then the add rounded again: the same values as a separate add). dy and residual may have strided rows
// (as `out`): they are read in place.
at::Tensor rms_norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& rstd,
                        const at::Tensor& dweight, const at::Tensor& residual = {}, const at::Tensor& amax = {},
                        const at::Tensor& out = {});

// Per-head RMSNorm (Qwen3's and Gemma 3's q_norm / k_norm) in place over `heads` heads of hd columns starting at
// column col0 of every row of qkv ([N, W], unit column stride). Returns the input heads as a contiguous
// [N * heads, hd] matrix (the backward's x) and rstd (fp32 [N * heads]). weight: [hd].
std::tuple<at::Tensor, at::Tensor> head_rms_norm_fwd_(at::Tensor& qkv, int64_t col0, int64_t heads, int64_t hd,
                                                      const at::Tensor& weight, double eps);
// Its backward in place over the same heads of dqkv (dy in, dx out), given the forward's x and rstd; adds the
// weight gradient into dweight (undefined: frozen).
void head_rms_norm_bwd_(at::Tensor& dqkv, int64_t col0, int64_t heads, int64_t hd, const at::Tensor& x,
                        const at::Tensor& weight, const at::Tensor& rstd, const at::Tensor& dweight);

// The gated MLP's activation. kSilu: SwiGLU (Llama, Mistral, Qwen, Phi); kGeluTanh: GeGLU with the tanh GELU
// (Gemma's gelu_pytorch_tanh).
enum class GluAct { kSilu, kGeluTanh };
// gu: [N, 2I] = [gate | up] (one GEMM's output). Returns act(gate) * up: [N, I] (act(gate) rounded to gu's dtype
// first, as transformers).
at::Tensor glu_fwd(const at::Tensor& gu, GluAct act, const at::Tensor& amax = {});
// Gradient of glu_fwd with respect to gu, given the output gradient da [N, I]: [N, 2I] (fp32 math, rounded once).
at::Tensor glu_bwd(const at::Tensor& gu, const at::Tensor& da, GluAct act, const at::Tensor& amax = {});
inline at::Tensor swiglu_fwd(const at::Tensor& gu, const at::Tensor& amax = {}) {
  return glu_fwd(gu, GluAct::kSilu, amax);
}
inline at::Tensor swiglu_bwd(const at::Tensor& gu, const at::Tensor& da, const at::Tensor& amax = {}) {
  return glu_bwd(gu, da, GluAct::kSilu, amax);
}

// Rotates the q and k heads of a fused projection in place. qkv: [N, (nh + 2 * nkv) * hd] (q heads, then
// k heads, then v heads; N = B * T rows), cos/sin: [N, hd] (the two halves repeated, as transformers).
// inverse = true applies the transpose rotation (the backward of the forward rotation). amax: of the whole
// qkv after the rotation (v heads included).
// The attention backward's q, k and v gradients (each [B, heads, T, hd], any strides with a unit one along hd)
// as the rows of one [N = B T, (nh + 2 nkv) hd] gradient, with rope_'s rotation (inverse or not) applied to the q
// and k heads: what copying them into such a buffer and then rope_ give, bit for bit, in one pass (the CUDA
// kernel reads each gradient once and writes each row once). amax: as rope_'s.
at::Tensor rope_from_heads(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv, const at::Tensor& cos,
                           const at::Tensor& sin, bool inverse, const at::Tensor& amax = {});
void rope_(at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin, int64_t nh, int64_t nkv, int64_t hd,
           bool inverse, const at::Tensor& amax = {});

// Folds max |x| (fp32) into the amax slot: the reference path's amax, and the one for inputs no op of ours
// produces.
void fold_amax(const at::Tensor& amax, const at::Tensor& x);

// Cross-entropy forward and backward at once over a chunk of logits [n, V] (compute dtype, as the LM head's
// GEMM writes them; the math in fp32, as transformers upcasts). targets: int64 [n], -100 = no target.
// Returns the summed loss (fp32, 0-dim) and overwrites `logits` with d(loss * scale) / dlogits.
at::Tensor cross_entropy_fwd_bwd_(at::Tensor& logits, const at::Tensor& targets, double scale);

// One AdamW step in place over flat tensors of one size (torch.optim.AdamW's math, decoupled weight decay, fp32
// arithmetic in the order of torch's fused AdamW): g' = g * grad_mul (grad_mul: undefined = 1, or one fp32
// element on the device, e.g. gradient clipping's factor); p -= lr * wd * p; m = b1 m + (1 - b1) g';
// v = b2 v + (1 - b2) g'^2; p -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps). step: 1-based.
// bf16 CUDA tensors (contiguous, 16-byte aligned) take one fused kernel per call (one pass, 14 bytes a
// parameter); everything else runs the ATen reference ops here.
void adamw_step_(at::Tensor& p, const at::Tensor& g, at::Tensor& m, at::Tensor& v, double lr, double beta1,
                 double beta2, double weight_decay, double eps, int64_t step, const at::Tensor& grad_mul = {});
// Whether adamw_step_ takes the fused kernel for these tensors.
bool adamw_kernel_for(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m, const at::Tensor& v);

// out = alpha * a @ b + beta * c (2-D; c undefined or beta 0: no c); c may be out itself (accumulating in
// place). bf16 CUDA tensors go through cuBLASLt (trainer/cuda/gemm_cuda.h: c is read by the GEMM, not copied
// into out first, and the algorithm of each shape is the fastest of the heuristic's candidates, timed once);
// elsewhere, and with AIR_TRAIN_GEMM=aten, ATen's addmm (the reference). AIR_TRAIN_GEMM_TUNE=0: the heuristic's
// first algorithm instead of the timed one (the comparison in docs/performance.md).
void gemm_into(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const at::Tensor& c = {},
               double alpha = 1, double beta = 1);
// a @ b (+ c) in a new tensor (a's dtype and device).
at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c = {});

// Whether CUDA tensors take our fused kernels (a CUDA build with trainer/cuda compiled in).
bool have_cuda_kernels();
// Force the ATen path even where kernels exist (tests compare the two).
void set_use_cuda_kernels(bool on);

}  // namespace air::train::ops
