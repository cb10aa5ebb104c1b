// FP8 (e4m3) GEMMs for the block linears (`precision: fp8`): current (dynamic) scaling, tensorwise or
// rowwise, on CUDA through at::_scaled_mm; elsewhere an emulation in plain float ops (the same rounding
// to the e4m3 grid, the same scales, an fp32 GEMM) so CPU builds without float8 dtypes test the logic.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>

namespace air::train::fp8 {

// The largest finite e4m3 (float8_e4m3fn) value: amax maps onto it.
constexpr double kE4m3Max = 448.0;

enum class Scaling { kTensorwise, kRowwise };

// One GEMM operand: a matrix [R, C] stored row-major whose C columns are the GEMM's reduction dimension,
// as e4m3 (native) or as fp32 values on the e4m3 grid (emulated), with its dequantising scale: the matrix
// is about data * scale_inv. scale_inv is fp32: 0-dim (tensorwise) or [R, 1] (rowwise: one per row).
struct Operand {
  at::Tensor data, scale_inv;
  bool defined() const { return data.defined(); }
  int64_t bytes() const;
};

// Both operands one matrix x [R, C] can be: `rows` is x itself (for x @ W^T), `cols` its transpose [C, R]
// (for the GEMMs that reduce over R). Tensorwise they share one scale; rowwise each has its own.
struct Quantized {
  Operand rows, cols;
};

// Quantises x (2-D, any float dtype) with current scaling: amax from x now, scale = 448 / amax. Makes
// `rows` and/or `cols` as asked.
Quantized quantize(const at::Tensor& x, Scaling s, bool rows, bool cols);

// Tensorwise current scaling with x's amax computed before (max |x|, fp32, one element on x's device):
// what the op that produced x folded into a slot as it wrote x (trainer/model/ops.h), so no pass reads x
// only for its amax. scale = 448 / max(amax, 1e-12); the same bytes and scales as quantize(x, kTensorwise)
// when amax is max |x| (quantize is this with the amax taken here). On CUDA one kernel computes the scale
// and writes both copies.
Quantized quantize_amax(const at::Tensor& x, const at::Tensor& amax, bool rows, bool cols);

// a [M, K] and b [N, K] (both row-major, K reduced): returns a @ b^T [M, N] in out_dtype, dequantised.
// fast_accum: Hopper's faster fp8 accumulation (the forward GEMMs; gradients take the exact one).
at::Tensor mm_nt(const Operand& a, const Operand& b, at::ScalarType out_dtype, bool fast_accum);

// out = a @ b^T written into `out` (contiguous, out's dtype), with no temporary where the GEMM can write
// there directly (native, 16-byte aligned); else through one.
void mm_nt_out(at::Tensor& out, const Operand& a, const Operand& b, bool fast_accum);

// A weight's two operands, made once per step: `rows` for the forward (x @ W^T), `cols` for the input
// gradient (dy @ W).
using Weight = Quantized;
Weight quantize_weight(const at::Tensor& w, Scaling s);

// Rounds fp32 values to the nearest e4m3 value (ties to even, saturating at +-448, subnormals down to
// 2^-9), in plain float ops: the emulation's cast.
at::Tensor round_to_e4m3(const at::Tensor& x);

// Whether a tensor on this device takes the native FP8 path (a CUDA build of libtorch with float8 and
// _scaled_mm, and not forced off by set_emulate).
bool native(const at::Tensor& x);
// Force the emulation even on CUDA (the GPU check compares the two).
void set_emulate(bool on);
// Use the fused CUDA cast (trainer/cuda/fp8_cuda.h) where it applies (default), or ATen's ops (the check
// times both).
void set_cast_kernel(bool on);
// Whether _scaled_mm can take these sizes natively (every dimension a multiple of 16).
bool shapes_ok(int64_t m, int64_t n, int64_t k);

}  // namespace air::train::fp8
