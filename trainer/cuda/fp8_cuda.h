// The FP8 cast of trainer/model/fp8_linear.h in one CUDA kernel: bf16 in, fp32 scaling, e4m3 out (ties to
// even, saturating), the row-major copy and the transposed copy written in the same pass over x.
#pragma once
#include <ATen/ATen.h>

#include <tuple>
#include <utility>

namespace air::train::fp8::cuda {

// Whether fp8_cast takes x: a contiguous 2-D bf16 CUDA tensor whose sizes are multiples of 4.
bool cast_ok(const at::Tensor& x);
// x: [R, C]. row_scale multiplies x for the row-major copy, col_scale for the transposed one; each is fp32
// with one element (tensorwise) or R (row_scale) / C (col_scale) elements (rowwise). Returns (rows [R, C],
// cols [C, R]) in float8_e4m3fn; a copy not asked for is undefined.
std::pair<at::Tensor, at::Tensor> fp8_cast(const at::Tensor& x, const at::Tensor& row_scale,
                                           const at::Tensor& col_scale, bool rows, bool cols);
// Tensorwise, from an amax computed before (fp32, one element on x's device; typically by x's producer):
// the kernel derives scale = 448 / max(amax, 1e-12) itself and writes the dequantising 1 / scale (fp32,
// 0-dim) as the third result, so no launch does the scale's arithmetic.
std::tuple<at::Tensor, at::Tensor, at::Tensor> fp8_cast_amax(const at::Tensor& x, const at::Tensor& amax, bool rows,
                                                             bool cols);

}  // namespace air::train::fp8::cuda
