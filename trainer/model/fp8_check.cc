// air-train-check --fp8 (trainer/model/fp8_check.h): errors and timings of the FP8 GEMMs on the GPU.
#include "trainer/model/fp8_check.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "trainer/metrics.h"
#include "trainer/model/fp8_linear.h"

namespace air::train::fp8 {
namespace {

double rel(const at::Tensor& got, const at::Tensor& want) {
  at::Tensor g = got.to(at::kFloat), w = want.to(at::kFloat);
  return ((g - w).norm() / w.norm()).item<double>();
}

// Median-free mean of `iters` runs after warm-up, in ms (the device synchronised around the loop).
double time_ms(const at::Device& dev, const std::function<void()>& fn, int iters = 20) {
  for (int i = 0; i < 3; ++i) fn();
  synchronize(dev);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) fn();
  synchronize(dev);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
}

struct Shape {
  const char* name;
  int64_t M, K;  // W: [M, K]
};

}  // namespace

int run_gpu_check(std::ostream& out) {
  const at::Device dev(at::kCUDA, 0);
  const auto bf = at::TensorOptions().device(dev).dtype(at::kBFloat16);
  if (!native(at::empty({1}, bf))) {
    out << "fp8: this build has no native FP8 (needs a CUDA libtorch >= 2.5)\n";
    return 1;
  }
  at::manual_seed(0);
  const int64_t N = 8192;  // tokens: 8 rows of 1024, or one of 8192
  const std::vector<Shape> shapes = {{"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096},
                                     {"down", 4096, 14336}};
  bool ok = true;
  char line[512];
  for (Scaling s : {Scaling::kTensorwise, Scaling::kRowwise}) {
    const char* sn = s == Scaling::kTensorwise ? "tensorwise" : "rowwise";
    double fwd_bf16 = 0, fwd_fp8 = 0, fwd_gemm = 0;
    for (const Shape& sh : shapes) {
      at::Tensor x = at::randn({N, sh.K}, bf), w = at::randn({sh.M, sh.K}, bf) * 0.02,
                 dy = at::randn({N, sh.M}, bf) * 1e-3;
      at::Tensor xf = x.to(at::kFloat), wf = w.to(at::kFloat), dyf = dy.to(at::kFloat);
      Quantized xq = quantize(x, s, true, true), dq = quantize(dy, s, true, true);
      Weight wq = quantize_weight(w, s);
      at::Tensor y = mm_nt(xq.rows, wq.rows, at::kBFloat16, true);
      at::Tensor dx = mm_nt(dq.rows, wq.cols, at::kBFloat16, false);
      at::Tensor dw = mm_nt(dq.cols, xq.cols, at::kBFloat16, false);
      const double ey = rel(y, at::mm(xf, wf.t())), edx = rel(dx, at::mm(dyf, wf)), edw = rel(dw, at::mm(dyf.t(), xf));
      // The CPU tests' emulation on the same data: the same grid and scales, so nearly the same numbers.
      set_emulate(true);
      at::Tensor ye = mm_nt(quantize(x, s, true, false).rows, quantize_weight(w, s).rows, at::kBFloat16, true);
      set_emulate(false);
      const double emu = rel(y, ye);
      // The fused cast kernel against ATen's ops: the same bytes.
      set_cast_kernel(false);
      Quantized xa = quantize(x, s, true, true);
      set_cast_kernel(true);
      auto bytes = [](const at::Tensor& t) { return t.view(at::kByte); };
      const bool same = at::equal(bytes(xa.rows.data), bytes(xq.rows.data)) &&
                        at::equal(bytes(xa.cols.data), bytes(xq.cols.data)) &&
                        at::equal(xa.cols.scale_inv, xq.cols.scale_inv);
      const bool pass =
          same && ey < 0.05 && edx < 0.05 && edw < 0.05 && emu < 0.01 && std::isfinite(ey + edx + edw + emu);
      ok = ok && pass;
      const double flop = 2.0 * N * sh.M * sh.K;
      const double t_bf16 = time_ms(dev, [&] { (void)at::mm(x, w.t()); });
      const double t_gemm = time_ms(dev, [&] { (void)mm_nt(xq.rows, wq.rows, at::kBFloat16, true); });
      const double t_q = time_ms(dev, [&] { (void)quantize(x, s, true, true); });
      set_cast_kernel(false);
      const double t_qa = time_ms(dev, [&] { (void)quantize(x, s, true, true); });
      set_cast_kernel(true);
      const double t_lin = time_ms(dev, [&] { (void)mm_nt(quantize(x, s, true, true).rows, wq.rows, at::kBFloat16, true); });
      fwd_bf16 += t_bf16, fwd_fp8 += t_lin, fwd_gemm += t_gemm;
      std::snprintf(line, sizeof line,
                    "fp8 %s %-7s %5ldx%-5ld err y %.4f dx %.4f dw %.4f, vs emulation %.5f, kernel %s %s | bf16 "
                    "%.3f ms (%.0f TFLOP/s), fp8 GEMM %.3f ms (%.0f), quantise x (both copies) %.3f ms (ATen ops "
                    "%.3f), fp8 linear %.3f ms\n",
                    sn, sh.name, static_cast<long>(sh.M), static_cast<long>(sh.K), ey, edx, edw, emu,
                    same ? "= ATen" : "!= ATen", pass ? "ok" : "FAIL", t_bf16, flop / t_bf16 * 1e-9, t_gemm,
                    flop / t_gemm * 1e-9, t_q, t_qa, t_lin);
      out << line << std::flush;
    }
    std::snprintf(line, sizeof line,
                  "fp8 %s: one block's forward GEMMs at %ld tokens: bf16 %.3f ms, fp8 GEMMs alone %.3f ms (%.2fx), "
                  "with quantising the inputs %.3f ms (%.2fx)\n",
                  sn, static_cast<long>(N), fwd_bf16, fwd_gemm, fwd_bf16 / fwd_gemm, fwd_fp8, fwd_bf16 / fwd_fp8);
    out << line;
  }
  out << "fp8: " << (ok ? "PASS" : "FAIL") << "\n";
  return ok ? 0 : 1;
}

}  // namespace air::train::fp8
