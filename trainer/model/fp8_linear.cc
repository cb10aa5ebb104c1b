// FP8 quantisation and GEMMs (trainer/model/fp8_linear.h): native e4m3 through at::_scaled_mm on CUDA,
// and the float emulation that CPU builds (Debian's libtorch has no float8 dtypes) and the tests run.
#include "trainer/model/fp8_linear.h"

#include <torch/version.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <tuple>

// _scaled_mm with this signature (one output tensor, optional bias and result scale) and float8 dtypes:
// CUDA builds of libtorch >= 2.5.
#if defined(AIR_TRAIN_CUDA) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))
#define AIR_HAVE_FP8 1
#else
#define AIR_HAVE_FP8 0
#endif
#ifndef AIR_TRAIN_CUDA_KERNELS
#define AIR_TRAIN_CUDA_KERNELS 0
#endif
#if AIR_HAVE_FP8 && AIR_TRAIN_CUDA_KERNELS
#include "trainer/cuda/fp8_cuda.h"
#define AIR_FP8_KERNEL 1
#else
#define AIR_FP8_KERNEL 0
#endif

namespace air::train::fp8 {
namespace {

std::atomic<bool> g_emulate{false};
std::atomic<bool> g_kernel{true};

// amax of x over `dim` (kept as a size-1 dimension), or over everything when dim < 0; fp32. A zero
// amax (an all-zero row or gradient) gets a tiny floor so the scale stays finite and zeros stay zeros.
at::Tensor amax_of(const at::Tensor& x, int64_t dim) {
  at::Tensor a = dim < 0 ? at::linalg_vector_norm(x, INFINITY, c10::nullopt, false, at::kFloat)
                         : at::linalg_vector_norm(x, INFINITY, at::IntArrayRef{dim}, true, at::kFloat);
  return a.clamp_min(1e-12);
}

// x * scale rounded to e4m3 (native dtype or the emulation's fp32 values on the grid).
at::Tensor cast(const at::Tensor& x, const at::Tensor& scale, bool nat) {
#if AIR_HAVE_FP8
  // In fp32, as the kernel and the emulation: one rounding (a bf16 product first would round twice).
  // |x * scale| <= 448 up to an fp32 ulp, which rounds to 448: no overflow to NaN.
  if (nat) return (x.to(at::kFloat) * scale).to(at::kFloat8_e4m3fn);
#endif
  (void)nat;
  return round_to_e4m3(x.to(at::kFloat) * scale);
}

// The fused cast (trainer/cuda/fp8_cuda.h) where it applies: both copies in one pass, fp32 scaling.
bool kernel_takes(const at::Tensor& x, bool nat) {
#if AIR_FP8_KERNEL
  return nat && g_kernel.load() && cuda::cast_ok(x);
#else
  (void)x, (void)nat;
  return false;
#endif
}

// Rowwise through the fused cast (tensorwise goes through quantize_amax).
Quantized quantize_kernel_rowwise(const at::Tensor& x, bool rows, bool cols) {
  Quantized q;
#if AIR_FP8_KERNEL
  at::Tensor rscale, cscale;
  if (rows) rscale = kE4m3Max / amax_of(x, 1);  // [R, 1]
  if (cols) cscale = kE4m3Max / amax_of(x, 0);  // [1, C]
  auto [r, c] = cuda::fp8_cast(x, rscale, cscale, rows, cols);
  if (rows) q.rows = {r, rscale.reciprocal()};
  if (cols) q.cols = {c, cscale.reciprocal().t().contiguous()};  // [C, 1]
#else
  (void)x, (void)rows, (void)cols;
#endif
  return q;
}

}  // namespace

void set_cast_kernel(bool on) { g_kernel.store(on); }

int64_t Operand::bytes() const {
  int64_t n = 0;
  for (const at::Tensor* t : {&data, &scale_inv})
    if (t->defined()) n += t->numel() * static_cast<int64_t>(t->element_size());
  return n;
}

bool native(const at::Tensor& x) {
#if AIR_HAVE_FP8
  return x.is_cuda() && !g_emulate.load();
#else
  (void)x;
  return false;
#endif
}

void set_emulate(bool on) { g_emulate.store(on); }

bool shapes_ok(int64_t m, int64_t n, int64_t k) { return m % 16 == 0 && n % 16 == 0 && k % 16 == 0; }

at::Tensor round_to_e4m3(const at::Tensor& x) {
  at::Tensor a = x.abs().clamp_max(kE4m3Max);
  // a = m * 2^e with m in [0.5, 1): floor(log2 a) = e - 1, exactly (no log2 rounding). Three mantissa bits
  // give a step of 2^(floor(log2 a) - 3); below 2^-6 the subnormal step 2^-9 holds.
  at::Tensor e = std::get<1>(at::frexp(a));
  at::Tensor step = at::exp2((e - 1).clamp_min(-6).to(at::kFloat) - 3);
  at::Tensor r = (at::round(a / step) * step).clamp_max(kE4m3Max);  // round: ties to even
  return r * x.sign();
}

Quantized quantize_amax(const at::Tensor& x, const at::Tensor& amax, bool rows, bool cols) {
  const bool nat = native(x);
  Quantized q;
#if AIR_FP8_KERNEL
  if (kernel_takes(x, nat) && amax.is_cuda()) {
    auto [r, c, inv] = cuda::fp8_cast_amax(x, amax, rows, cols);
    if (rows) q.rows = {r, inv};
    if (cols) q.cols = {c, inv};
    return q;
  }
#endif
  // fill(448) / amax in fp32 (ATen's scalar / tensor), then its reciprocal: the kernel's arithmetic.
  at::Tensor scale = kE4m3Max / amax.to(at::kFloat).reshape({}).clamp_min(1e-12);
  at::Tensor inv = scale.reciprocal();
  at::Tensor d = cast(x, scale, nat);
  if (rows) q.rows = {d, inv};
  if (cols) q.cols = {d.t().contiguous(), inv};  // a one-byte transpose when native
  return q;
}

Quantized quantize(const at::Tensor& x, Scaling s, bool rows, bool cols) {
  // Tensorwise: the amax here, then the same cast as for an amax from x's producer.
  if (s == Scaling::kTensorwise)
    return quantize_amax(x, at::linalg_vector_norm(x, INFINITY, c10::nullopt, false, at::kFloat), rows, cols);
  const bool nat = native(x);
  if (kernel_takes(x, nat)) return quantize_kernel_rowwise(x, rows, cols);
  Quantized q;
  if (rows) {
    at::Tensor scale = kE4m3Max / amax_of(x, 1);  // [R, 1]
    q.rows = {cast(x, scale, nat), scale.reciprocal()};
  }
  if (cols) {
    at::Tensor scale = kE4m3Max / amax_of(x, 0);  // [1, C]
    q.cols = {cast(x, scale, nat).t().contiguous(), scale.reciprocal().t().contiguous()};
  }
  return q;
}

void mm_nt_out(at::Tensor& out, const Operand& a, const Operand& b, bool fast_accum) {
#if AIR_HAVE_FP8
  const bool aligned = reinterpret_cast<uintptr_t>(out.data_ptr()) % 16 == 0 && out.is_contiguous();
  if (a.data.scalar_type() == at::kFloat8_e4m3fn && aligned) {
    at::Tensor sb = a.scale_inv.dim() > 0 ? b.scale_inv.view({1, -1}) : b.scale_inv;
    at::_scaled_mm_out(out, a.data, b.data.t(), a.scale_inv, sb, std::nullopt, std::nullopt, out.scalar_type(),
                       fast_accum);
    return;
  }
#endif
  out.copy_(mm_nt(a, b, out.scalar_type(), fast_accum));
}

Weight quantize_weight(const at::Tensor& w, Scaling s) { return quantize(w, s, true, true); }

at::Tensor mm_nt(const Operand& a, const Operand& b, at::ScalarType out_dtype, bool fast_accum) {
  const bool rowwise = a.scale_inv.dim() > 0;
#if AIR_HAVE_FP8
  if (a.data.scalar_type() == at::kFloat8_e4m3fn) {
    at::Tensor sb = rowwise ? b.scale_inv.view({1, -1}) : b.scale_inv;
    return at::_scaled_mm(a.data, b.data.t(), a.scale_inv, sb, std::nullopt, std::nullopt, out_dtype, fast_accum);
  }
#endif
  (void)fast_accum;
  // Emulated: the e4m3 values are exact in fp32 and the GEMM accumulates in fp32, as the tensor cores do.
  at::Tensor out = at::mm(a.data, b.data.t());
  out.mul_(a.scale_inv).mul_(rowwise ? b.scale_inv.view({1, -1}) : b.scale_inv);
  return out.to(out_dtype);
}

}  // namespace air::train::fp8
