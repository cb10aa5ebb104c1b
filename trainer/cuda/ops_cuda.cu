// Fused CUDA kernels for trainer/model/ops.h: one launch per RMSNorm / SwiGLU / RoPE call instead of the 5-10
// ATen launches of the reference path. bf16 storage, fp32 arithmetic; rounding points follow transformers'
// eager bf16 code (normalise in fp32, round, then multiply by the weight) so results match within bf16.
#include "trainer/cuda/ops_cuda.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <initializer_list>
#include <stdexcept>

namespace air::train::ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;        // bf16 values per 16-byte load
constexpr int kMaxChunks = 4;  // RMSNorm backward keeps H / (kThreads * kVec) partial weight sums per thread

struct alignas(16) Vec8 {
  __nv_bfloat16 v[kVec];
};

__device__ __forceinline__ float bf(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ __nv_bfloat16 tobf(float x) { return __float2bfloat16(x); }

__device__ float block_sum(float v) {
  __shared__ float warp_sums[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
  __syncthreads();  // warp_sums is reused by the next call
  return total;
}

// FP8 amax of an output, folded into its producer. |v| of a float has its sign bit clear, and such floats
// order as their int bits, with NaN above +inf: each thread keeps the int max of the bf16 values it wrote
// (as the FP8 cast reads them), the block reduces, and one atomicMax per block folds into the fp32 slot
// (zeroed before the producer runs). A NaN wins, as in ATen's amax.
__device__ __forceinline__ int amax_step(int m, float v) { return max(m, __float_as_int(fabsf(v))); }

// Every thread of the block must call it.
__device__ void block_amax_into(int m, float* slot) {
  __shared__ int warp_max[32];
  for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  if (lane == 0) warp_max[warp] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < warps; ++w) m = max(m, warp_max[w]);
    m = max(m, warp_max[0]);
    atomicMax(reinterpret_cast<int*>(slot), m);
  }
}

// One block per row. amax (nullable): the FP8 amax slot of y.
// ldy: y's row stride (elements; H when y is contiguous, more when y is the left part of a wider buffer).
__global__ void rms_fwd_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                               __nv_bfloat16* __restrict__ y, float* __restrict__ rstd_out, int H, int64_t ldy,
                               float eps, float* __restrict__ amax) {
  const int64_t row = blockIdx.x;
  const Vec8* xr = reinterpret_cast<const Vec8*>(x + row * H);
  const Vec8* wr = reinterpret_cast<const Vec8*>(w);
  Vec8* yr = reinterpret_cast<Vec8*>(y + row * ldy);
  const int nv = H / kVec;
  float ss = 0.f;
  int m = 0;
  for (int i = threadIdx.x; i < nv; i += kThreads) {
    Vec8 a = xr[i];
#pragma unroll
    for (int k = 0; k < kVec; ++k) ss += bf(a.v[k]) * bf(a.v[k]);
  }
  const float rstd = rsqrtf(block_sum(ss) / static_cast<float>(H) + eps);
  if (threadIdx.x == 0) rstd_out[row] = rstd;
  for (int i = threadIdx.x; i < nv; i += kThreads) {
    Vec8 a = xr[i], ww = wr[i], o;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      o.v[k] = tobf(bf(ww.v[k]) * bf(tobf(bf(a.v[k]) * rstd)));
      m = amax_step(m, bf(o.v[k]));
    }
    yr[i] = o;
  }
  if (amax) block_amax_into(m, amax);
}

// A grid of blocks strides over the rows; each thread keeps its columns' weight-gradient partial sums in
// registers and writes them once to partial[block, H]. ld: the row strides of dy, dx and residual (elements;
// H where contiguous).
struct RmsBwdStrides {
  int64_t dy, dx, residual;
};
// kDw false (the weight is frozen: LoRA): no weight-gradient sums, no partial buffer, and the kernel runs with
// more blocks (the sums' registers and partial rows no longer limit them).
template <bool kDw>
__global__ void rms_bwd_kernel(const __nv_bfloat16* __restrict__ dy, const __nv_bfloat16* __restrict__ x,
                               const __nv_bfloat16* __restrict__ w, const float* __restrict__ rstd,
                               __nv_bfloat16* __restrict__ dx, float* __restrict__ partial, int64_t N, int H,
                               const __nv_bfloat16* __restrict__ residual, float* __restrict__ amax,
                               RmsBwdStrides ld) {
  int m = 0;
  const int nv = H / kVec;
  float dw[kMaxChunks][kVec];
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c)
#pragma unroll
    for (int k = 0; k < kVec; ++k) dw[c][k] = 0.f;
  const Vec8* wr = reinterpret_cast<const Vec8*>(w);
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const Vec8* xr = reinterpret_cast<const Vec8*>(x + row * H);
    const Vec8* gr = reinterpret_cast<const Vec8*>(dy + row * ld.dy);
    const float r = rstd[row];
    float dot = 0.f;  // sum(dn * n)
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) {
      const int i = threadIdx.x + c * kThreads;
      if (i >= nv) break;
      Vec8 a = xr[i], g = gr[i], ww = wr[i];
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float n = bf(a.v[k]) * r;
        dot += bf(g.v[k]) * bf(ww.v[k]) * n;
        if (kDw) dw[c][k] += bf(g.v[k]) * bf(tobf(n));
      }
    }
    const float mean = block_sum(dot) / static_cast<float>(H);
    Vec8* dr = reinterpret_cast<Vec8*>(dx + row * ld.dx);
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) {
      const int i = threadIdx.x + c * kThreads;
      if (i >= nv) break;
      Vec8 a = xr[i], g = gr[i], ww = wr[i], o;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float n = bf(a.v[k]) * r;
        o.v[k] = tobf(r * (bf(g.v[k]) * bf(ww.v[k]) - n * mean));
      }
      if (residual) {  // dx + residual, rounded as the separate bf16 add rounded it
        const Vec8 res = reinterpret_cast<const Vec8*>(residual + row * ld.residual)[i];
#pragma unroll
        for (int k = 0; k < kVec; ++k) o.v[k] = tobf(bf(o.v[k]) + bf(res.v[k]));
      }
#pragma unroll
      for (int k = 0; k < kVec; ++k) m = amax_step(m, bf(o.v[k]));
      dr[i] = o;
    }
  }
  if (kDw) {
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) {
      const int i = threadIdx.x + c * kThreads;
      if (i >= nv) break;
#pragma unroll
      for (int k = 0; k < kVec; ++k) partial[static_cast<int64_t>(blockIdx.x) * H + i * kVec + k] = dw[c][k];
    }
  }
  if (amax) block_amax_into(m, amax);
}

__device__ __forceinline__ float silu_f(float g) { return g / (1.f + __expf(-g)); }

// GELU, tanh approximation (gelu_pytorch_tanh: Gemma's GeGLU): 0.5 x (1 + tanh(k0 (x + k1 x^3))).
constexpr float kGeluK0 = 0.7978845608028654f, kGeluK1 = 0.044715f;
__device__ __forceinline__ float gelu_tanh_f(float x) {
  return 0.5f * x * (1.f + tanhf(kGeluK0 * (x + kGeluK1 * x * x * x)));
}
// Its derivative.
__device__ __forceinline__ float gelu_tanh_grad_f(float x) {
  const float t = tanhf(kGeluK0 * (x + kGeluK1 * x * x * x));
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * kGeluK0 * (1.f + 3.f * kGeluK1 * x * x);
}

// act(gate) * up for gu = [gate | up]: kGelu false = SiLU (SwiGLU), true = GELU tanh (GeGLU). act(gate) is
// rounded to bf16 before the product, as transformers' act_fn(gate_proj(x)) * up_proj(x) rounds it.
template <bool kGelu>
__global__ void glu_fwd_kernel(const __nv_bfloat16* __restrict__ gu, __nv_bfloat16* __restrict__ a, int64_t N, int I,
                               float* __restrict__ amax) {
  const int nv = I / kVec;
  int m = 0;
  const int64_t total = N * nv;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = idx / nv;
    const int col = static_cast<int>(idx % nv);
    const Vec8 g = reinterpret_cast<const Vec8*>(gu + row * 2 * I)[col];
    const Vec8 u = reinterpret_cast<const Vec8*>(gu + row * 2 * I + I)[col];
    Vec8 o;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float gf = bf(g.v[k]);
      o.v[k] = tobf(bf(tobf(kGelu ? gelu_tanh_f(gf) : silu_f(gf))) * bf(u.v[k]));
      m = amax_step(m, bf(o.v[k]));
    }
    reinterpret_cast<Vec8*>(a + row * I)[col] = o;
  }
  if (amax) block_amax_into(m, amax);
}

template <bool kGelu>
__global__ void glu_bwd_kernel(const __nv_bfloat16* __restrict__ gu, const __nv_bfloat16* __restrict__ da,
                               __nv_bfloat16* __restrict__ dgu, int64_t N, int I, float* __restrict__ amax) {
  const int nv = I / kVec;
  int m = 0;
  const int64_t total = N * nv;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = idx / nv;
    const int col = static_cast<int>(idx % nv);
    const Vec8 g = reinterpret_cast<const Vec8*>(gu + row * 2 * I)[col];
    const Vec8 u = reinterpret_cast<const Vec8*>(gu + row * 2 * I + I)[col];
    const Vec8 d = reinterpret_cast<const Vec8*>(da + row * I)[col];
    Vec8 og, ou;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float gf = bf(g.v[k]), uf = bf(u.v[k]), df = bf(d.v[k]);
      if (kGelu) {
        og.v[k] = tobf(df * uf * gelu_tanh_grad_f(gf));
        ou.v[k] = tobf(df * gelu_tanh_f(gf));
      } else {
        const float sig = 1.f / (1.f + __expf(-gf));
        og.v[k] = tobf(df * uf * sig * (1.f + gf * (1.f - sig)));
        ou.v[k] = tobf(df * gf * sig);
      }
      m = amax_step(amax_step(m, bf(og.v[k])), bf(ou.v[k]));
    }
    reinterpret_cast<Vec8*>(dgu + row * 2 * I)[col] = og;
    reinterpret_cast<Vec8*>(dgu + row * 2 * I + I)[col] = ou;
  }
  if (amax) block_amax_into(m, amax);
}

// One thread per (row, q-or-k head, pair index i < hd/2): rotates (x[i], x[i + hd/2]). With amax set, the
// threads also walk the v heads (heads up to all_heads; read only) and amax gets the whole row's max |value|.
__global__ void rope_kernel(__nv_bfloat16* __restrict__ qkv, const __nv_bfloat16* __restrict__ cos,
                            const __nv_bfloat16* __restrict__ sin, int64_t N, int heads, int hd, int64_t row_stride,
                            bool inverse, int all_heads, float* __restrict__ amax) {
  const int half = hd / 2;
  const int walk = amax ? all_heads : heads;
  const int64_t total = N * walk * half;
  int m = 0;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % half);
    const int64_t rh = idx / half;
    const int h = static_cast<int>(rh % walk);
    const int64_t row = rh / walk;
    __nv_bfloat16* p = qkv + row * row_stride + static_cast<int64_t>(h) * hd;
    if (h >= heads) {  // a v head: not rotated
      m = amax_step(amax_step(m, bf(p[i])), bf(p[i + half]));
      continue;
    }
    const float c1 = bf(cos[row * hd + i]), c2 = bf(cos[row * hd + i + half]);
    const float s1 = bf(sin[row * hd + i]), s2 = bf(sin[row * hd + i + half]);
    const float x1 = bf(p[i]), x2 = bf(p[i + half]);
    float o1, o2;
    if (!inverse) {
      o1 = x1 * c1 - x2 * s1;
      o2 = x2 * c2 + x1 * s2;
    } else {
      o1 = x1 * c1 + x2 * s2;
      o2 = x2 * c2 - x1 * s1;
    }
    p[i] = tobf(o1);
    p[i + half] = tobf(o2);
    m = amax_step(amax_step(m, bf(p[i])), bf(p[i + half]));
  }
  if (amax) block_amax_into(m, amax);
}

// RoPE on 8 values of a head's first half (x1) and the matching 8 of its second half (x2), at `row` of the
// cos/sin tables ([N, hd], the halves repeated) and vector j of the half: o1, o2, and the amax fold of both.
// forward: [x1 c - x2 s, x2 c + x1 s]; inverse (the transpose): [x1 c + x2 s, x2 c - x1 s].
__device__ __forceinline__ int rope8(const Vec8& x1, const Vec8& x2, const __nv_bfloat16* __restrict__ cos,
                                     const __nv_bfloat16* __restrict__ sin, int64_t row, int hd, int j, bool inverse,
                                     Vec8& o1, Vec8& o2, int m) {
  const int half = hd / 2;
  const Vec8 c1 = reinterpret_cast<const Vec8*>(cos + row * hd)[j];
  const Vec8 c2 = reinterpret_cast<const Vec8*>(cos + row * hd + half)[j];
  const Vec8 s1 = reinterpret_cast<const Vec8*>(sin + row * hd)[j];
  const Vec8 s2 = reinterpret_cast<const Vec8*>(sin + row * hd + half)[j];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const float a = bf(x1.v[k]), b = bf(x2.v[k]);
    float r1, r2;
    if (!inverse) {
      r1 = a * bf(c1.v[k]) - b * bf(s1.v[k]);
      r2 = b * bf(c2.v[k]) + a * bf(s2.v[k]);
    } else {
      r1 = a * bf(c1.v[k]) + b * bf(s2.v[k]);
      r2 = b * bf(c2.v[k]) - a * bf(s1.v[k]);
    }
    o1.v[k] = tobf(r1);
    o2.v[k] = tobf(r2);
    m = amax_step(amax_step(m, bf(o1.v[k])), bf(o2.v[k]));
  }
  return m;
}

// The same with 16-byte accesses: one thread per (row, head, 8 consecutive pairs), when a half head is a whole
// number of 8-element vectors and the rows and cos/sin are 16-byte aligned (rope_ checks; the kernel above
// serves the rest). The scalar kernel moved 2 bytes per access and ran at ~1.3 TB/s (the 2026-12-04 traces).
__global__ void rope_vec_kernel(__nv_bfloat16* __restrict__ qkv, const __nv_bfloat16* __restrict__ cos,
                                const __nv_bfloat16* __restrict__ sin, int64_t N, int heads, int hd,
                                int64_t row_stride, bool inverse, int all_heads, float* __restrict__ amax) {
  const int half = hd / 2, nv = half / kVec;
  const int walk = amax ? all_heads : heads;
  const int64_t total = N * walk * nv;
  int m = 0;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(idx % nv);
    const int64_t rh = idx / nv;
    const int h = static_cast<int>(rh % walk);
    const int64_t row = rh / walk;
    __nv_bfloat16* p = qkv + row * row_stride + static_cast<int64_t>(h) * hd;
    Vec8* pa = reinterpret_cast<Vec8*>(p) + j;
    Vec8* pb = reinterpret_cast<Vec8*>(p + half) + j;
    const Vec8 x1 = *pa, x2 = *pb;
    if (h >= heads) {  // a v head: not rotated
#pragma unroll
      for (int k = 0; k < kVec; ++k) m = amax_step(amax_step(m, bf(x1.v[k])), bf(x2.v[k]));
      continue;
    }
    Vec8 o1, o2;
    m = rope8(x1, x2, cos, sin, row, hd, j, inverse, o1, o2, m);
    *pa = o1;
    *pb = o2;
  }
  if (amax) block_amax_into(m, amax);
}

// rope_from_heads: the q, k and v gradients ([B, heads, T, hd] with strides b, h, t) gathered into the rows of
// one [N, W] buffer, the q and k heads rotated on the way with rope_vec_kernel's arithmetic (the same bits as a
// copy and then rope_). Each thread moves 8 values of a head's first half and the matching 8 of its second.
struct HeadSrc {
  const __nv_bfloat16* p;
  int64_t sb, sh, st;
};
__global__ void rope_from_heads_kernel(__nv_bfloat16* __restrict__ out, HeadSrc q, HeadSrc k, HeadSrc v,
                                       const __nv_bfloat16* __restrict__ cos, const __nv_bfloat16* __restrict__ sin,
                                       int64_t T, int64_t N, int nh, int nkv, int hd, bool inverse,
                                       float* __restrict__ amax) {
  const int half = hd / 2, nv = half / kVec, all_heads = nh + 2 * nkv;
  const int64_t total = N * all_heads * nv, row_stride = static_cast<int64_t>(all_heads) * hd;
  int m = 0;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(idx % nv);
    const int64_t rh = idx / nv;
    const int h = static_cast<int>(rh % all_heads);
    const int64_t row = rh / all_heads, b = row / T, t = row % T;
    const HeadSrc& s = h < nh ? q : (h < nh + nkv ? k : v);
    const int hh = h < nh ? h : (h < nh + nkv ? h - nh : h - nh - nkv);
    const __nv_bfloat16* src = s.p + b * s.sb + hh * s.sh + t * s.st;
    const Vec8 x1 = reinterpret_cast<const Vec8*>(src)[j], x2 = reinterpret_cast<const Vec8*>(src + half)[j];
    __nv_bfloat16* dst = out + row * row_stride + static_cast<int64_t>(h) * hd;
    Vec8* pa = reinterpret_cast<Vec8*>(dst) + j;
    Vec8* pb = reinterpret_cast<Vec8*>(dst + half) + j;
    if (h >= nh + nkv) {  // a v head: copied, not rotated
#pragma unroll
      for (int e = 0; e < kVec; ++e) m = amax_step(amax_step(m, bf(x1.v[e])), bf(x2.v[e]));
      *pa = x1;
      *pb = x2;
      continue;
    }
    Vec8 o1, o2;
    m = rope8(x1, x2, cos, sin, row, hd, j, inverse, o1, o2, m);
    *pa = o1;
    *pb = o2;
  }
  if (amax) block_amax_into(m, amax);
}

// One block per row of logits: pass 1 finds the row's log-sum-exp online (max and scaled sum in fp32) and
// reads the target's logit; pass 2 overwrites the row with scale * (softmax - onehot). Two reads and one
// write of the bf16 row instead of the fp32 copies of the unfused path.
__global__ void ce_kernel(__nv_bfloat16* __restrict__ logits, const int64_t* __restrict__ targets,
                          float* __restrict__ row_loss, int64_t V, float scale) {
  __shared__ float sm[kThreads / 32], ss[kThreads / 32];
  __shared__ float target_logit;
  const int64_t row = blockIdx.x;
  __nv_bfloat16* x = logits + row * V;
  const int64_t t = targets[row];
  const bool valid = t >= 0 && t < V;
  if (threadIdx.x == 0) target_logit = valid ? bf(x[t]) : 0.f;
  float m = -INFINITY, s = 0.f;
  const int64_t nv = V / kVec;
  for (int64_t i = threadIdx.x; i < nv; i += kThreads) {
    const Vec8 a = reinterpret_cast<const Vec8*>(x)[i];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float v = bf(a.v[k]);
      if (v > m) {
        s = s * __expf(m - v) + 1.f;
        m = v;
      } else {
        s += __expf(v - m);
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    const float M = fmaxf(m, m2);
    s = (M == -INFINITY) ? 0.f : s * __expf(m - M) + s2 * __expf(m2 - M);
    m = M;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) sm[warp] = m, ss[warp] = s;
  __syncthreads();
  float M = -INFINITY, S = 0.f;
  for (int w = 0; w < kThreads / 32; ++w) M = fmaxf(M, sm[w]);
  for (int w = 0; w < kThreads / 32; ++w) S += ss[w] * __expf(sm[w] - M);
  const float lse = M + logf(S);
  if (threadIdx.x == 0) row_loss[row] = valid ? lse - target_logit : 0.f;
  const float coef = valid ? scale : 0.f;
  for (int64_t i = threadIdx.x; i < nv; i += kThreads) {
    Vec8 a = reinterpret_cast<const Vec8*>(x)[i];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const int64_t col = i * kVec + k;
      const float p = __expf(bf(a.v[k]) - lse) - (col == t ? 1.f : 0.f);
      a.v[k] = tobf(p * coef);
    }
    reinterpret_cast<Vec8*>(x)[i] = a;
  }
}


// AdamW (decoupled weight decay) over one flat shard, bf16 storage, fp32 math in torch's fused-AdamW order:
// g *= grad_mul; p -= lr*wd*p; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g; p -= (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps).
// One 16-byte load of each of p, g, m, v per 8 elements (the whole pass is bandwidth: 14 bytes a parameter);
// a grid-stride loop over the vectors, the tail (n % 8) by the first threads.
struct AdamWArgs {
  float lr, beta1, beta2, wd, eps, step_size, bc2_sqrt;
};

__device__ __forceinline__ void adamw_one(float& p, float g, float& m, float& v, const AdamWArgs& a, float mul) {
  g *= mul;
  p -= a.lr * a.wd * p;
  m = a.beta1 * m + (1.f - a.beta1) * g;
  v = a.beta2 * v + (1.f - a.beta2) * g * g;
  p -= a.step_size * m / (sqrtf(v) / a.bc2_sqrt + a.eps);
}

__global__ void adamw_kernel(__nv_bfloat16* __restrict__ p, const __nv_bfloat16* __restrict__ g,
                             __nv_bfloat16* __restrict__ m, __nv_bfloat16* __restrict__ v, int64_t n, AdamWArgs a,
                             const float* __restrict__ grad_mul) {
  const float mul = grad_mul ? *grad_mul : 1.f;
  const int64_t nv = n / kVec;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < nv; i += stride) {
    Vec8 pv = reinterpret_cast<const Vec8*>(p)[i], gv = reinterpret_cast<const Vec8*>(g)[i];
    Vec8 mv = reinterpret_cast<const Vec8*>(m)[i], vv = reinterpret_cast<const Vec8*>(v)[i];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      float pf = bf(pv.v[k]), mf = bf(mv.v[k]), vf = bf(vv.v[k]);
      adamw_one(pf, bf(gv.v[k]), mf, vf, a, mul);
      pv.v[k] = tobf(pf);
      mv.v[k] = tobf(mf);
      vv.v[k] = tobf(vf);
    }
    reinterpret_cast<Vec8*>(p)[i] = pv;
    reinterpret_cast<Vec8*>(m)[i] = mv;
    reinterpret_cast<Vec8*>(v)[i] = vv;
  }
  const int64_t t = nv * kVec + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < n) {
    float pf = bf(p[t]), mf = bf(m[t]), vf = bf(v[t]);
    adamw_one(pf, bf(g[t]), mf, vf, a, mul);
    p[t] = tobf(pf);
    m[t] = tobf(mf);
    v[t] = tobf(vf);
  }
}


// Per-head RMSNorm (Qwen3's and Gemma 3's q/k norms) in place in the fused q|k|v rows: one warp per (row, head),
// each lane one 16-byte vector of the head (hd <= 32 * 8). The forward saves the input heads (contiguous
// [rows * heads, hd], the backward's x) and rstd; no copy of the heads out of and back into qkv.
constexpr int kHeadWarps = kThreads / 32;
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void head_rms_fwd_kernel(__nv_bfloat16* __restrict__ qkv, int64_t ld, int heads, int hd,
                                    const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ x_save,
                                    float* __restrict__ rstd_out, int64_t total, float eps) {
  const int64_t wid = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (wid >= total) return;  // whole warps leave together (blockDim is a multiple of 32)
  const int nv = hd / kVec;
  Vec8* p = reinterpret_cast<Vec8*>(qkv + (wid / heads) * ld + (wid % heads) * hd);
  Vec8 a;
  float ss = 0.f;
  if (lane < nv) {
    a = p[lane];
    reinterpret_cast<Vec8*>(x_save + wid * hd)[lane] = a;
#pragma unroll
    for (int k = 0; k < kVec; ++k) ss += bf(a.v[k]) * bf(a.v[k]);
  }
  const float rstd = rsqrtf(warp_sum(ss) / static_cast<float>(hd) + eps);
  if (lane == 0) rstd_out[wid] = rstd;
  if (lane < nv) {
    const Vec8 ww = reinterpret_cast<const Vec8*>(w)[lane];
    Vec8 o;
#pragma unroll
    for (int k = 0; k < kVec; ++k) o.v[k] = tobf(bf(ww.v[k]) * bf(tobf(bf(a.v[k]) * rstd)));
    p[lane] = o;
  }
}

// The backward, in place over the heads' gradient in dqkv; warps stride over the (row, head) pairs, each lane
// keeps its columns' weight-gradient sums, and each block writes one fp32 partial row [hd] (partial null: frozen).
__global__ void head_rms_bwd_kernel(__nv_bfloat16* __restrict__ dqkv, int64_t ld, int heads, int hd,
                                    const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                    const float* __restrict__ rstd, float* __restrict__ partial, int64_t total) {
  __shared__ float sums[kHeadWarps][32 * kVec];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int nv = hd / kVec;
  float dw[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) dw[k] = 0.f;
  Vec8 ww;
  if (lane < nv) ww = reinterpret_cast<const Vec8*>(w)[lane];
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kHeadWarps;
  for (int64_t wid = static_cast<int64_t>(blockIdx.x) * kHeadWarps + warp; wid < total; wid += warps) {
    Vec8* p = reinterpret_cast<Vec8*>(dqkv + (wid / heads) * ld + (wid % heads) * hd);
    const float r = rstd[wid];
    Vec8 a, g;
    float dot = 0.f;
    if (lane < nv) {
      a = reinterpret_cast<const Vec8*>(x + wid * hd)[lane];
      g = p[lane];
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float n = bf(a.v[k]) * r;
        dot += bf(g.v[k]) * bf(ww.v[k]) * n;
        dw[k] += bf(g.v[k]) * bf(tobf(n));
      }
    }
    const float mean = warp_sum(dot) / static_cast<float>(hd);
    if (lane < nv) {
      Vec8 o;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float n = bf(a.v[k]) * r;
        o.v[k] = tobf(r * (bf(g.v[k]) * bf(ww.v[k]) - n * mean));
      }
      p[lane] = o;
    }
  }
  if (!partial) return;
#pragma unroll
  for (int k = 0; k < kVec; ++k) sums[warp][lane * kVec + k] = dw[k];
  __syncthreads();
  for (int i = threadIdx.x; i < hd; i += blockDim.x) {
    float t = 0.f;
    for (int v = 0; v < kHeadWarps; ++v) t += sums[v][i];
    partial[static_cast<int64_t>(blockIdx.x) * hd + i] = t;
  }
}

const __nv_bfloat16* cptr(const at::Tensor& t) { return reinterpret_cast<const __nv_bfloat16*>(t.data_ptr()); }
__nv_bfloat16* mptr(const at::Tensor& t) { return reinterpret_cast<__nv_bfloat16*>(t.data_ptr()); }

void need(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("air-train CUDA kernel: ") + what);
}

// The FP8 amax slot an op folds into: undefined (none) or one contiguous fp32 element on x's device.
float* amax_ptr(const at::Tensor& amax) {
  if (!amax.defined()) return nullptr;
  need(amax.scalar_type() == at::kFloat && amax.numel() == 1 && amax.is_cuda(), "amax slot: one fp32 element on CUDA");
  return amax.data_ptr<float>();
}

// A bf16 matrix [rows, cols] whose rows our kernels can read or write in place: unit column stride, row
// stride at least cols and a whole number of 16-byte vectors, 16-byte aligned start.
bool rows_ok(const at::Tensor& t) {
  return t.dim() == 2 && t.scalar_type() == at::kBFloat16 && t.is_cuda() && t.stride(1) == 1 &&
         t.stride(0) >= t.size(1) && t.stride(0) % kVec == 0 && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

int grid_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * 16;
  return static_cast<int>(std::max<int64_t>(1, std::min(blocks, cap)));
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(const at::Tensor& x_in, const at::Tensor& weight, double eps,
                                                const at::Tensor& amax, const at::Tensor& out) {
  at::Tensor x = x_in.contiguous();
  const int64_t H = x.size(-1), N = x.numel() / H;
  need(H % kVec == 0 && weight.is_contiguous() && weight.numel() == H, "rms_norm_fwd shape");
  need(!out.defined() || (out.dim() == 2 && out.size(0) == N && out.size(1) == H), "rms_norm_fwd out: [N, H]");
  // An `out` whose rows the kernel cannot write as 16-byte vectors gets the result by a copy.
  const bool direct = out.defined() && rows_ok(out);
  at::Tensor y = direct ? out : at::empty({N, H}, x.options());
  at::Tensor rstd = at::empty({N}, x.options().dtype(at::kFloat));
  if (N > 0) {
    rms_fwd_kernel<<<static_cast<unsigned>(N), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
        cptr(x), cptr(weight), mptr(y), rstd.data_ptr<float>(), static_cast<int>(H), y.stride(0),
        static_cast<float>(eps), amax_ptr(amax));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  if (!out.defined()) return {y.view(x.sizes()), rstd};
  if (!direct) out.copy_(y);
  return {out, rstd};
}

at::Tensor rms_norm_bwd(const at::Tensor& dy_in, const at::Tensor& x_in, const at::Tensor& weight,
                        const at::Tensor& rstd, const at::Tensor& dweight, const at::Tensor& residual_in,
                        const at::Tensor& amax, const at::Tensor& out) {
  at::Tensor x = x_in.contiguous();
  const int64_t H = x.size(-1), N = x.numel() / H;
  // dy and the residual are read where they are when their rows are (a view of the left columns of a wider
  // buffer, e.g. a folded GEMM's output): no copy.
  at::Tensor dy = rows_ok(dy_in) && dy_in.size(0) == N ? dy_in : dy_in.contiguous().view({N, H});
  at::Tensor residual = !residual_in.defined() || (rows_ok(residual_in) && residual_in.size(0) == N)
                            ? residual_in
                            : residual_in.contiguous().view({N, H});
  need(!residual.defined() || (residual.scalar_type() == at::kBFloat16 && residual.numel() == x.numel()),
       "rms_norm_bwd residual");
  need(H % kVec == 0 && H <= static_cast<int64_t>(kMaxChunks) * kThreads * kVec, "rms_norm_bwd hidden size");
  need(!out.defined() || (out.dim() == 2 && out.size(0) == N && out.size(1) == H), "rms_norm_bwd out: [N, H]");
  const bool direct = out.defined() && rows_ok(out);
  at::Tensor dx = direct ? out : at::empty_like(x);
  if (N == 0) return out.defined() ? out : dx;
  // Blocks per SM: 2 with the weight gradient (each block writes an fp32 partial row, summed after), 8 without
  // (full occupancy; nothing to sum). AIR_TRAIN_RMS_BWD_BLOCKS=<n> overrides both (the bench's comparisons).
  const bool want_dw = dweight.defined();
  static const int env_blocks = [] {
    const char* v = std::getenv("AIR_TRAIN_RMS_BWD_BLOCKS");
    return v && *v ? std::max(1, std::atoi(v)) : 0;
  }();
  const int per_sm = env_blocks ? env_blocks : (want_dw ? 2 : 8);
  const int blocks = static_cast<int>(std::min<int64_t>(
      N, static_cast<int64_t>(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * per_sm));
  const RmsBwdStrides ld{dy.stride(0), direct ? out.stride(0) : H, residual.defined() ? residual.stride(0) : H};
  if (want_dw) {
    at::Tensor partial = at::empty({blocks, H}, x.options().dtype(at::kFloat));
    rms_bwd_kernel<true><<<blocks, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
        cptr(dy), cptr(x), cptr(weight), rstd.data_ptr<float>(), mptr(dx), partial.data_ptr<float>(), N,
        static_cast<int>(H), residual.defined() ? cptr(residual) : nullptr, amax_ptr(amax), ld);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    dweight.add_(partial.sum(0).to(dweight.scalar_type()));
  } else {
    rms_bwd_kernel<false><<<blocks, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
        cptr(dy), cptr(x), cptr(weight), rstd.data_ptr<float>(), mptr(dx), nullptr, N, static_cast<int>(H),
        residual.defined() ? cptr(residual) : nullptr, amax_ptr(amax), ld);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  if (out.defined() && !direct) return out.copy_(dx);
  return dx;
}

namespace {
// qkv's heads [col0, col0 + heads * hd) of every row, readable in place by the head kernels.
bool heads_ok(const at::Tensor& qkv, int64_t col0, int64_t heads, int64_t hd) {
  return rows_ok(qkv) && hd % kVec == 0 && hd <= 32 * kVec && col0 % kVec == 0 && col0 + heads * hd <= qkv.size(1);
}
}  // namespace

std::tuple<at::Tensor, at::Tensor> head_rms_norm_fwd_(at::Tensor& qkv, int64_t col0, int64_t heads, int64_t hd,
                                                      const at::Tensor& weight, double eps) {
  if (!heads_ok(qkv, col0, heads, hd) || !weight.is_contiguous() || weight.numel() != hd ||
      weight.scalar_type() != at::kBFloat16)
    return {};
  const int64_t total = qkv.size(0) * heads;
  at::Tensor x = at::empty({total, hd}, qkv.options());
  at::Tensor rstd = at::empty({total}, qkv.options().dtype(at::kFloat));
  if (total == 0) return {x, rstd};
  const int64_t blocks = (total + kHeadWarps - 1) / kHeadWarps;
  head_rms_fwd_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      mptr(qkv) + col0, qkv.stride(0), static_cast<int>(heads), static_cast<int>(hd), cptr(weight), mptr(x),
      rstd.data_ptr<float>(), total, static_cast<float>(eps));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {x, rstd};
}

bool head_rms_norm_bwd_(at::Tensor& dqkv, int64_t col0, int64_t heads, int64_t hd, const at::Tensor& x,
                        const at::Tensor& weight, const at::Tensor& rstd, const at::Tensor& dweight) {
  const int64_t total = dqkv.size(0) * heads;
  if (!heads_ok(dqkv, col0, heads, hd) || !weight.is_contiguous() || weight.numel() != hd ||
      weight.scalar_type() != at::kBFloat16 || !x.is_contiguous() || x.numel() != total * hd ||
      x.scalar_type() != at::kBFloat16 || rstd.numel() != total)
    return false;
  if (total == 0) return true;
  const int blocks = static_cast<int>(std::min<int64_t>(
      (total + kHeadWarps - 1) / kHeadWarps,
      static_cast<int64_t>(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * 8));
  at::Tensor partial;
  if (dweight.defined()) partial = at::empty({blocks, hd}, dqkv.options().dtype(at::kFloat));
  head_rms_bwd_kernel<<<blocks, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      mptr(dqkv) + col0, dqkv.stride(0), static_cast<int>(heads), static_cast<int>(hd), cptr(x), cptr(weight),
      rstd.data_ptr<float>(), partial.defined() ? partial.data_ptr<float>() : nullptr, total);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (dweight.defined()) dweight.add_(partial.sum(0).to(dweight.scalar_type()));
  return true;
}

at::Tensor glu_fwd(const at::Tensor& gu_in, bool gelu_tanh, const at::Tensor& amax) {
  at::Tensor gu = gu_in.contiguous();
  const int64_t I = gu.size(-1) / 2, N = gu.numel() / (2 * I);
  need(I % kVec == 0, "glu width");
  auto sizes = gu.sizes().vec();
  sizes.back() = I;
  at::Tensor a = at::empty(sizes, gu.options());
  if (N == 0) return a;
  auto kernel = gelu_tanh ? glu_fwd_kernel<true> : glu_fwd_kernel<false>;
  kernel<<<grid_for(N * I / kVec), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(cptr(gu), mptr(a), N,
                                                                                      static_cast<int>(I), amax_ptr(amax));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return a;
}

at::Tensor glu_bwd(const at::Tensor& gu_in, const at::Tensor& da_in, bool gelu_tanh, const at::Tensor& amax) {
  at::Tensor gu = gu_in.contiguous(), da = da_in.contiguous();
  const int64_t I = gu.size(-1) / 2, N = gu.numel() / (2 * I);
  need(I % kVec == 0 && da.numel() == N * I, "glu_bwd shape");
  at::Tensor dgu = at::empty_like(gu);
  if (N == 0) return dgu;
  auto kernel = gelu_tanh ? glu_bwd_kernel<true> : glu_bwd_kernel<false>;
  kernel<<<grid_for(N * I / kVec), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      cptr(gu), cptr(da), mptr(dgu), N, static_cast<int>(I), amax_ptr(amax));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return dgu;
}

at::Tensor cross_entropy_fwd_bwd_(at::Tensor& logits, const at::Tensor& targets_in, double scale) {
  need(logits.dim() == 2 && logits.is_contiguous() && logits.size(1) % kVec == 0, "cross-entropy logits layout");
  const int64_t n = logits.size(0), V = logits.size(1);
  at::Tensor targets = targets_in.to(at::kLong).contiguous();
  at::Tensor row_loss = at::empty({n}, logits.options().dtype(at::kFloat));
  if (n == 0) return row_loss.sum();
  ce_kernel<<<static_cast<unsigned>(n), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      mptr(logits), targets.data_ptr<int64_t>(), row_loss.data_ptr<float>(), V, static_cast<float>(scale));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return row_loss.sum();
}

at::Tensor rope_from_heads(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv, const at::Tensor& cos_in,
                           const at::Tensor& sin_in, bool inverse, const at::Tensor& amax) {
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const at::Tensor* parts[] = {&dq, &dk, &dv};
  for (const at::Tensor* t : parts)
    if (t->dim() != 4 || t->scalar_type() != at::kBFloat16 || !t->is_cuda() || t->stride(3) != 1 ||
        t->size(0) != dq.size(0) || t->size(2) != dq.size(2) || t->size(3) != dq.size(3) || !aligned(t->data_ptr()) ||
        t->stride(0) % kVec != 0 || t->stride(1) % kVec != 0 || t->stride(2) % kVec != 0)
      return {};
  const int64_t B = dq.size(0), T = dq.size(2), hd = dq.size(3), nh = dq.size(1), nkv = dk.size(1), N = B * T;
  if (dv.size(1) != nkv || (hd / 2) % kVec != 0 || hd % 2 != 0) return {};
  at::Tensor cos = cos_in.contiguous().to(at::kBFloat16), sin = sin_in.contiguous().to(at::kBFloat16);
  need(cos.numel() == N * hd && sin.numel() == N * hd, "rope_from_heads cos/sin shape");
  if (!aligned(cos.data_ptr()) || !aligned(sin.data_ptr())) return {};
  at::Tensor out = at::empty({N, (nh + 2 * nkv) * hd}, dq.options());
  if (N == 0) return out;
  auto src = [](const at::Tensor& t) { return HeadSrc{cptr(t), t.stride(0), t.stride(1), t.stride(2)}; };
  rope_from_heads_kernel<<<grid_for(N * (nh + 2 * nkv) * (hd / 2 / kVec)), kThreads, 0,
                           at::cuda::getCurrentCUDAStream()>>>(mptr(out), src(dq), src(dk), src(dv), cptr(cos),
                                                               cptr(sin), T, N, static_cast<int>(nh),
                                                               static_cast<int>(nkv), static_cast<int>(hd), inverse,
                                                               amax_ptr(amax));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

void rope_(at::Tensor& qkv, const at::Tensor& cos_in, const at::Tensor& sin_in, int64_t nh, int64_t nkv, int64_t hd,
           bool inverse, const at::Tensor& amax) {
  need(qkv.dim() == 2 && qkv.stride(1) == 1 && qkv.size(1) == (nh + 2 * nkv) * hd, "rope qkv layout");
  at::Tensor cos = cos_in.contiguous().to(at::kBFloat16), sin = sin_in.contiguous().to(at::kBFloat16);
  const int64_t N = qkv.size(0);
  need(cos.numel() == N * hd && sin.numel() == N * hd, "rope cos/sin shape");
  if (N == 0) return;
  const int heads = static_cast<int>(nh + nkv), all_heads = static_cast<int>(nh + 2 * nkv);
  float* am = amax_ptr(amax);
  auto aligned = [](const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; };
  if ((hd / 2) % kVec == 0 && qkv.stride(0) % kVec == 0 && aligned(qkv) && aligned(cos) && aligned(sin)) {
    rope_vec_kernel<<<grid_for(N * (am ? all_heads : heads) * (hd / 2 / kVec)), kThreads, 0,
                      at::cuda::getCurrentCUDAStream()>>>(mptr(qkv), cptr(cos), cptr(sin), N, heads,
                                                          static_cast<int>(hd), qkv.stride(0), inverse, all_heads, am);
  } else {
    rope_kernel<<<grid_for(N * (am ? all_heads : heads) * (hd / 2)), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
        mptr(qkv), cptr(cos), cptr(sin), N, heads, static_cast<int>(hd), qkv.stride(0), inverse, all_heads, am);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace air::train::ops::cuda

namespace air::train::ops::cuda {

void adamw_step_(at::Tensor& p, const at::Tensor& g, at::Tensor& m, at::Tensor& v, double lr, double beta1,
                 double beta2, double weight_decay, double eps, int64_t step, const at::Tensor& grad_mul) {
  const int64_t n = p.numel();
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&p, &g, &m, &v})
    need(t->is_cuda() && t->is_contiguous() && t->scalar_type() == at::kBFloat16 && t->numel() == n &&
             reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 == 0,
         "adamw_step_: four contiguous, 16-byte aligned bf16 tensors of one size");
  if (grad_mul.defined())
    need(grad_mul.is_cuda() && grad_mul.scalar_type() == at::kFloat && grad_mul.numel() == 1, "adamw_step_ grad_mul");
  if (n == 0) return;
  AdamWArgs a;
  a.lr = static_cast<float>(lr);
  a.beta1 = static_cast<float>(beta1);
  a.beta2 = static_cast<float>(beta2);
  a.wd = static_cast<float>(weight_decay);
  a.eps = static_cast<float>(eps);
  a.step_size = static_cast<float>(lr / (1 - std::pow(beta1, static_cast<double>(step))));
  a.bc2_sqrt = static_cast<float>(std::sqrt(1 - std::pow(beta2, static_cast<double>(step))));
  const int64_t work = std::max<int64_t>(n / kVec, n % kVec);
  adamw_kernel<<<grid_for(work), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      mptr(p), cptr(g), mptr(m), mptr(v), n, a, grad_mul.defined() ? grad_mul.data_ptr<float>() : nullptr);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace air::train::ops::cuda
