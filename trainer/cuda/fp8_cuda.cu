// The FP8 cast kernel (trainer/cuda/fp8_cuda.h). ATen's path made a bf16 temporary for x * scale, a cast and
// a one-byte transpose: about 11 bytes of traffic per element and four launches; this reads x once (2 bytes)
// and writes both copies (1 + 1), in one launch.
#include "trainer/cuda/fp8_cuda.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <stdexcept>

namespace air::train::fp8::cuda {
namespace {

constexpr int kTile = 64;   // a 64 x 64 tile of x per block
constexpr int kSide = 16;   // 16 x 16 threads, 4 consecutive elements each per row pass

__device__ __forceinline__ uint8_t to_e4m3(float v) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
}

// Tensorwise current scaling from an amax already computed (by x's producer): scale = 448 / max(amax, 1e-12)
// in fp32, as ATen's ops compute it on the host path (IEEE division; a NaN amax stays NaN, as clamp_min).
__device__ __forceinline__ float scale_of(float amax) {
  const float a = amax != amax ? amax : fmaxf(amax, 1e-12f);
  return 448.f / a;
}

// Thread (tx, ty) loads x[r0 + ty + 16 k][c0 + 4 tx .. + 3] for k = 0..3 (8-byte loads), writes their
// row-major e4m3 (4-byte stores), and keeps them in shared memory; then writes the transposed copy:
// cols[c0 + ty + 16 k][r0 + 4 tx .. + 3].
__global__ void cast_kernel(const __nv_bfloat16* __restrict__ x, int64_t R, int64_t C,
                            const float* __restrict__ row_scale, bool row_each, const float* __restrict__ col_scale,
                            bool col_each, uint8_t* __restrict__ rows, uint8_t* __restrict__ cols,
                            const float* __restrict__ amax, float* __restrict__ scale_inv) {
  __shared__ float tile[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  // With amax given, one scale for both copies, computed here (no launches for the scale's arithmetic).
  const float tscale = amax ? scale_of(*amax) : 0.f;
  if (amax && scale_inv && blockIdx.x == 0 && blockIdx.y == 0 && tx == 0 && ty == 0) *scale_inv = 1.f / tscale;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile, c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int k = 0; k < 4; ++k) {
    const int lr = ty + kSide * k;
    const int64_t r = r0 + lr, c = c0 + 4 * tx;
    if (r >= R || c >= C) continue;
    const uint2 raw = *reinterpret_cast<const uint2*>(x + r * C + c);
    const __nv_bfloat16* v = reinterpret_cast<const __nv_bfloat16*>(&raw);
    float f[4];
    for (int i = 0; i < 4; ++i) f[i] = __bfloat162float(v[i]);
    if (rows) {
      const float s = amax ? tscale : row_each ? row_scale[r] : row_scale[0];
      uint32_t packed = 0;
      for (int i = 0; i < 4; ++i) packed |= static_cast<uint32_t>(to_e4m3(f[i] * s)) << (8 * i);
      *reinterpret_cast<uint32_t*>(rows + r * C + c) = packed;
    }
    for (int i = 0; i < 4; ++i) tile[lr][4 * tx + i] = f[i];
  }
  if (!cols) return;
  __syncthreads();
  for (int k = 0; k < 4; ++k) {
    const int lc = ty + kSide * k;
    const int64_t c = c0 + lc, r = r0 + 4 * tx;
    if (c >= C || r >= R) continue;
    const float s = amax ? tscale : col_each ? col_scale[c] : col_scale[0];
    uint32_t packed = 0;
    for (int i = 0; i < 4; ++i) packed |= static_cast<uint32_t>(to_e4m3(tile[4 * tx + i][lc] * s)) << (8 * i);
    *reinterpret_cast<uint32_t*>(cols + c * R + r) = packed;
  }
}

}  // namespace

bool cast_ok(const at::Tensor& x) {
  return x.is_cuda() && x.dim() == 2 && x.scalar_type() == at::kBFloat16 && x.is_contiguous() && x.size(0) % 4 == 0 &&
         x.size(1) % 4 == 0 && x.size(0) / kTile < 65535;  // the grid's y limit
}

std::pair<at::Tensor, at::Tensor> fp8_cast(const at::Tensor& x, const at::Tensor& row_scale,
                                           const at::Tensor& col_scale, bool rows, bool cols) {
  if (!cast_ok(x)) throw std::invalid_argument("fp8_cast: x must be contiguous 2-D bf16 on CUDA, sizes multiples of 4");
  const int64_t R = x.size(0), C = x.size(1);
  auto scale_of = [](const at::Tensor& s, int64_t n) {
    if (!s.defined()) return std::make_pair(static_cast<const float*>(nullptr), false);
    if (s.scalar_type() != at::kFloat || !s.is_contiguous() || (s.numel() != 1 && s.numel() != n))
      throw std::invalid_argument("fp8_cast: a scale must be contiguous fp32 with 1 or one-per-row elements");
    return std::make_pair(static_cast<const float*>(s.data_ptr<float>()), s.numel() != 1 || n == 1);
  };
  auto [rs, r_each] = scale_of(rows ? row_scale : at::Tensor(), R);
  auto [cs, c_each] = scale_of(cols ? col_scale : at::Tensor(), C);
  if ((rows && !rs) || (cols && !cs)) throw std::invalid_argument("fp8_cast: a copy asked for without its scale");
  const auto opts = x.options().dtype(at::kFloat8_e4m3fn);
  at::Tensor out_rows = rows ? at::empty({R, C}, opts) : at::Tensor();
  at::Tensor out_cols = cols ? at::empty({C, R}, opts) : at::Tensor();
  if (R == 0 || C == 0) return {out_rows, out_cols};
  const dim3 grid(static_cast<unsigned>((C + kTile - 1) / kTile), static_cast<unsigned>((R + kTile - 1) / kTile));
  const dim3 block(kSide, kSide);
  cast_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const __nv_bfloat16*>(x.data_ptr()), R, C, rs, r_each, cs, c_each,
      rows ? static_cast<uint8_t*>(out_rows.data_ptr()) : nullptr,
      cols ? static_cast<uint8_t*>(out_cols.data_ptr()) : nullptr, nullptr, nullptr);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out_rows, out_cols};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fp8_cast_amax(const at::Tensor& x, const at::Tensor& amax, bool rows,
                                                             bool cols) {
  if (!cast_ok(x)) throw std::invalid_argument("fp8_cast: x must be contiguous 2-D bf16 on CUDA, sizes multiples of 4");
  if (!amax.defined() || amax.scalar_type() != at::kFloat || amax.numel() != 1 || !amax.is_cuda())
    throw std::invalid_argument("fp8_cast_amax: amax must be one fp32 element on CUDA");
  const int64_t R = x.size(0), C = x.size(1);
  const auto opts = x.options().dtype(at::kFloat8_e4m3fn);
  at::Tensor out_rows = rows ? at::empty({R, C}, opts) : at::Tensor();
  at::Tensor out_cols = cols ? at::empty({C, R}, opts) : at::Tensor();
  at::Tensor inv = at::empty({}, x.options().dtype(at::kFloat));
  if (R == 0 || C == 0) {
    inv.fill_(1.0);
    return {out_rows, out_cols, inv};
  }
  const dim3 grid(static_cast<unsigned>((C + kTile - 1) / kTile), static_cast<unsigned>((R + kTile - 1) / kTile));
  const dim3 block(kSide, kSide);
  cast_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const __nv_bfloat16*>(x.data_ptr()), R, C, nullptr, false, nullptr, false,
      rows ? static_cast<uint8_t*>(out_rows.data_ptr()) : nullptr,
      cols ? static_cast<uint8_t*>(out_cols.data_ptr()) : nullptr, amax.data_ptr<float>(), inv.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out_rows, out_cols, inv};
}

}  // namespace air::train::fp8::cuda
