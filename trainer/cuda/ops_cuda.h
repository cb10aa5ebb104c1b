// Fused CUDA kernels for the elementwise chains of a Llama block (bf16 in, fp32 math, bf16 out). Built only
// in the CUDA build (AIR_TRAIN_CUDA_KERNELS); trainer/model/ops.cc calls them and keeps the ATen path as their
// reference.
#pragma once
#include <ATen/ATen.h>

#include <tuple>

namespace air::train::ops::cuda {

// amax (undefined = none): one fp32 element the op folds the max |output| into (trainer/model/ops.h).
std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(const at::Tensor& x, const at::Tensor& weight, double eps,
                                                const at::Tensor& amax, const at::Tensor& out);
at::Tensor rms_norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& rstd,
                        const at::Tensor& dweight, const at::Tensor& residual, const at::Tensor& amax,
                        const at::Tensor& out);
// Per-head RMSNorm in place (ops.h head_rms_norm_fwd_ / _bwd_): undefined / false where the layout does not suit.
std::tuple<at::Tensor, at::Tensor> head_rms_norm_fwd_(at::Tensor& qkv, int64_t col0, int64_t heads, int64_t hd,
                                                      const at::Tensor& weight, double eps);
bool head_rms_norm_bwd_(at::Tensor& dqkv, int64_t col0, int64_t heads, int64_t hd, const at::Tensor& x,
                        const at::Tensor& weight, const at::Tensor& rstd, const at::Tensor& dweight);
// gelu_tanh false: SwiGLU (silu); true: GeGLU with the tanh GELU.
at::Tensor glu_fwd(const at::Tensor& gu, bool gelu_tanh, const at::Tensor& amax);
at::Tensor glu_bwd(const at::Tensor& gu, const at::Tensor& da, bool gelu_tanh, const at::Tensor& amax);
at::Tensor cross_entropy_fwd_bwd_(at::Tensor& logits, const at::Tensor& targets, double scale);
// Undefined where the layout does not suit the kernel (ops.cc then copies and calls rope_).
at::Tensor rope_from_heads(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv, const at::Tensor& cos,
                           const at::Tensor& sin, bool inverse, const at::Tensor& amax);
void rope_(at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin, int64_t nh, int64_t nkv, int64_t hd,
           bool inverse, const at::Tensor& amax);

void adamw_step_(at::Tensor& p, const at::Tensor& g, at::Tensor& m, at::Tensor& v, double lr, double beta1,
                 double beta2, double weight_decay, double eps, int64_t step, const at::Tensor& grad_mul);

}  // namespace air::train::ops::cuda
