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
#include "trainer/model/ops.h"

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

float item(const at::Tensor& t) { return t.to(at::kFloat).item<float>(); }
float max_abs(const at::Tensor& t) {
  return item(at::linalg_vector_norm(t, INFINITY, c10::nullopt, false, at::kFloat));
}
bool same_bytes(const Quantized& a, const Quantized& b) {
  auto bytes = [](const at::Tensor& t) { return t.view(at::kByte); };
  return at::equal(bytes(a.rows.data), bytes(b.rows.data)) && at::equal(bytes(a.cols.data), bytes(b.cols.data)) &&
         at::equal(a.rows.scale_inv.reshape({}), b.rows.scale_inv.reshape({}));
}

// The CUDA kernels that produce FP8 inputs fold their outputs' amax (trainer/model/ops.h): each amax is
// exactly max |output| (ATen's reduction), the outputs are unchanged, and the cast from that amax writes
// the bytes quantize() writes. Returns whether all hold; prints one line.
bool check_producers(std::ostream& out, const at::Device& dev) {
  const auto bf = at::TensorOptions().device(dev).dtype(at::kBFloat16);
  const auto f32 = at::TensorOptions().device(dev).dtype(at::kFloat);
  const int64_t N = 8192, H = 4096, I = 14336, nh = 32, nkv = 8, hd = 128;
  bool ok = true;
  std::string bad;
  auto expect = [&](bool cond, const char* what) {
    if (!cond) bad += std::string(" ") + what;
    ok = ok && cond;
  };
  at::Tensor x = at::randn({N, H}, bf) * 3, w = at::randn({H}, bf);
  at::Tensor slot = at::zeros({}, f32);
  auto [y, rstd] = ops::rms_norm_fwd(x, w, 1e-5, slot);
  expect(item(slot) == max_abs(y), "rms_fwd-amax");
  expect(at::equal(std::get<0>(ops::rms_norm_fwd(x, w, 1e-5)), y), "rms_fwd-output");
  expect(same_bytes(quantize_amax(y, slot, true, true), quantize(y, Scaling::kTensorwise, true, true)), "cast-bytes");
  at::Tensor gu = at::randn({N, 2 * I}, bf), da = at::randn({N, I}, bf) * 1e-3;
  at::Tensor sa = at::zeros({}, f32), sg = at::zeros({}, f32);
  at::Tensor a = ops::swiglu_fwd(gu, sa), dgu = ops::swiglu_bwd(gu, da, sg);
  expect(item(sa) == max_abs(a) && at::equal(a, ops::swiglu_fwd(gu)), "swiglu_fwd");
  expect(item(sg) == max_abs(dgu) && at::equal(dgu, ops::swiglu_bwd(gu, da)), "swiglu_bwd");
  at::Tensor dy = at::randn({N, H}, bf) * 1e-3, res = at::randn({N, H}, bf) * 1e-2;
  at::Tensor dw1 = at::zeros({H}, bf), dw2 = at::zeros({H}, bf), sd = at::zeros({}, f32);
  at::Tensor plain = ops::rms_norm_bwd(dy, x, w, rstd, dw1).add_(res);
  at::Tensor fused = ops::rms_norm_bwd(dy, x, w, rstd, dw2, res, sd);
  expect(at::equal(plain, fused) && at::equal(dw1, dw2), "rms_bwd-residual");
  expect(item(sd) == max_abs(fused), "rms_bwd-amax");
  at::Tensor qkv = at::randn({N, (nh + 2 * nkv) * hd}, bf);
  qkv.narrow(1, (nh + nkv) * hd, nkv * hd).mul_(10);  // the largest values in the v heads, which RoPE skips
  at::Tensor ang = at::arange(N, f32).unsqueeze(1) * at::rand({1, hd / 2}, f32);
  at::Tensor emb = at::cat({ang, ang}, -1);
  at::Tensor cos = emb.cos().to(at::kBFloat16), sin = emb.sin().to(at::kBFloat16);
  at::Tensor ref = qkv.clone(), sq = at::zeros({}, f32);
  ops::rope_(ref, cos, sin, nh, nkv, hd, true);
  ops::rope_(qkv, cos, sin, nh, nkv, hd, true, sq);
  expect(at::equal(ref, qkv) && item(sq) == max_abs(qkv), "rope");
  // What folding the amax into the producer saves per cast, at the largest input (a: [8192, 14336]).
  const double t_q = time_ms(dev, [&] { (void)quantize(a, Scaling::kTensorwise, true, true); });
  const double t_qa = time_ms(dev, [&] { (void)quantize_amax(a, sa, true, true); });
  const double t_sw = time_ms(dev, [&] { (void)ops::swiglu_fwd(gu); });
  const double t_swa = time_ms(dev, [&] {
    sa.zero_();
    (void)ops::swiglu_fwd(gu, sa);
  });
  char line[512];
  std::snprintf(line, sizeof line,
                "fp8 producers' amax (RMSNorm fwd/bwd + residual, SwiGLU fwd/bwd, RoPE incl. v heads): %s%s | "
                "down's input [8192, 14336]: amax + cast %.3f ms, cast from the producer's amax %.3f ms; SwiGLU "
                "%.3f ms, with its amax (and the slot's zeroing) %.3f ms\n",
                ok ? "exact, same bytes" : "FAIL:", bad.c_str(), t_q, t_qa, t_sw, t_swa);
  out << line << std::flush;
  return ok;
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
  ok = check_producers(out, dev) && ok;
  out << "fp8: " << (ok ? "PASS" : "FAIL") << "\n";
  return ok ? 0 : 1;
}

}  // namespace air::train::fp8
