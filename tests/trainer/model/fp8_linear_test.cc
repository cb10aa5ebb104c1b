// precision: fp8 on the CPU (trainer/model/fp8_linear.h's emulation): the e4m3 grid, each FP8 GEMM of a
// block linear (forward, input gradient, weight gradient) against the fp32 GEMM on random data, the
// scaling that keeps large and small tensors on the grid, and an FP8 block against the fp32 block.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <cmath>
#include <set>

#include "tests/trainer/model/test_util.h"
#include "trainer/model/block.h"
#include "trainer/model/fp8_linear.h"
#include "trainer/model/model.h"
#include "trainer/model/ops.h"

using namespace air::train;

namespace {

double rel_err(const at::Tensor& got, const at::Tensor& want) {
  at::Tensor g = got.to(at::kFloat), w = want.to(at::kFloat);
  return ((g - w).norm() / w.norm()).item<double>();
}

// The three GEMMs of a linear y = x @ W^T, each from operands quantised as the block quantises them.
struct Gemms {
  at::Tensor y, dx, dw;
};
Gemms fp8_gemms(const at::Tensor& x, const at::Tensor& w, const at::Tensor& dy, fp8::Scaling s) {
  fp8::Quantized xq = fp8::quantize(x, s, true, true), dq = fp8::quantize(dy, s, true, true);
  fp8::Weight wq = fp8::quantize_weight(w, s);
  return {fp8::mm_nt(xq.rows, wq.rows, at::kFloat, true), fp8::mm_nt(dq.rows, wq.cols, at::kFloat, false),
          fp8::mm_nt(dq.cols, xq.cols, at::kFloat, false)};
}
Gemms exact_gemms(const at::Tensor& x, const at::Tensor& w, const at::Tensor& dy) {
  return {at::mm(x, w.t()), at::mm(dy, w), at::mm(dy.t(), x)};
}

// The same GEMMs with the operands rounded onto the e4m3 grid as they are, unscaled: what FP8 would be
// without the scaling.
Gemms unscaled_gemms(const at::Tensor& x, const at::Tensor& w, const at::Tensor& dy) {
  auto r = [](const at::Tensor& t) { return fp8::round_to_e4m3(t); };
  return exact_gemms(r(x), r(w), r(dy));
}

// e4m3's relative spacing is 2^-3, so one rounding errs by up to 2^-4 (about 2.2% RMS over random
// values); a GEMM of two rounded operands lands near 3.5% of its output's norm.
constexpr double kGemmTol = 0.05;

}  // namespace

TEST_CASE("fp8: rounding to e4m3 hits the format's grid") {
  at::Tensor x = at::tensor({0.0f, 1.0f, 1.0625f, 1.1f, -3.3f, 232.0f, 240.0f, 448.0f, 500.0f, -1e6f,
                             0.001953125f, 0.0009765625f, 0.0005f, 0.0029296875f});
  at::Tensor want = at::tensor({0.0f, 1.0f, 1.0f, 1.125f, -3.25f, 224.0f, 240.0f, 448.0f, 448.0f, -448.0f,
                                0.001953125f, 0.0f, 0.0f, 0.00390625f});
  at::Tensor got = fp8::round_to_e4m3(x);
  INFO(got);
  REQUIRE(at::equal(got, want));
  // Every value of [0, 448] rounds to one of e4m3fn's 127 non-negative finite values (0 and 0x01..0x7e).
  at::Tensor sweep = fp8::round_to_e4m3(at::linspace(0, 448, 2000001, at::kFloat));
  std::set<float> values;
  at::Tensor c = sweep.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) values.insert(c.data_ptr<float>()[i]);
  REQUIRE(values.size() == 127);
}

TEST_CASE("fp8: each GEMM of a linear stays within e4m3's error of the exact GEMM, at any magnitude") {
  at::manual_seed(7);
  const int64_t N = 64, K = 96, M = 80;
  for (fp8::Scaling s : {fp8::Scaling::kTensorwise, fp8::Scaling::kRowwise}) {
    // Magnitudes far outside e4m3's range on both sides: activations in the thousands, weights and
    // gradients far below its smallest normal (2^-6): only the scaling keeps them on the grid.
    for (double mag : {1.0, 3e3, 1e-5}) {
      at::Tensor x = at::randn({N, K}) * mag, w = at::randn({M, K}) * 0.02, dy = at::randn({N, M}) * mag * 1e-3;
      Gemms f = fp8_gemms(x, w, dy, s), e = exact_gemms(x, w, dy);
      const char* name = s == fp8::Scaling::kTensorwise ? "tensorwise" : "rowwise";
      INFO(name << " magnitude " << mag);
      REQUIRE(rel_err(f.y, e.y) < kGemmTol);
      REQUIRE(rel_err(f.dx, e.dx) < kGemmTol);
      REQUIRE(rel_err(f.dw, e.dw) < kGemmTol);
      REQUIRE(rel_err(f.y, e.y) > 1e-4);  // it did quantise: not an exact GEMM in disguise
    }
  }
}

TEST_CASE("fp8: without the scaling the same GEMMs fail the bound (the test above can fail)") {
  at::manual_seed(7);
  const int64_t N = 64, K = 96, M = 80;
  at::Tensor x = at::randn({N, K}) * 3e3, w = at::randn({M, K}) * 0.02, dy = at::randn({N, M}) * 1e-4;
  Gemms u = unscaled_gemms(x, w, dy), e = exact_gemms(x, w, dy);
  INFO("unscaled errors: y " << rel_err(u.y, e.y) << ", dx " << rel_err(u.dx, e.dx) << ", dw " << rel_err(u.dw, e.dw));
  // x saturates at 448; w (|w| ~ 0.02) keeps two or three bits; dy (~1e-4, below e4m3's smallest value
  // 2^-9) flushes to zero.
  REQUIRE(rel_err(u.y, e.y) > 4 * kGemmTol);
  REQUIRE(rel_err(u.dx, e.dx) > 4 * kGemmTol);
  REQUIRE(rel_err(u.dw, e.dw) > 4 * kGemmTol);
}

TEST_CASE("fp8: rowwise scales follow rows of different magnitudes, tensorwise loses the small ones") {
  at::manual_seed(11);
  const int64_t N = 64, K = 128, M = 32;
  // Row i of x is 10^(i % 8 - 4): one tensor scale leaves the small rows in the subnormals.
  at::Tensor mags = at::pow(10.0, (at::arange(N, at::kFloat).remainder(8) - 4)).unsqueeze(1);
  at::Tensor x = at::randn({N, K}) * mags, w = at::randn({M, K}) * 0.02;
  fp8::Weight wq = fp8::quantize_weight(w, fp8::Scaling::kRowwise);
  auto worst_row = [&](fp8::Scaling s) {
    fp8::Weight q = fp8::quantize_weight(w, s);
    at::Tensor y = fp8::mm_nt(fp8::quantize(x, s, true, false).rows, q.rows, at::kFloat, true);
    at::Tensor want = at::mm(x, w.t());
    return ((y - want).norm(2, {1}) / want.norm(2, {1})).max().item<double>();
  };
  const double row = worst_row(fp8::Scaling::kRowwise), tensor = worst_row(fp8::Scaling::kTensorwise);
  INFO("worst row: rowwise " << row << ", tensorwise " << tensor);
  REQUIRE(row < 2 * kGemmTol);  // the worst of 64 rows of 32 outputs each: a small sample, a wider bound
  REQUIRE(tensor > 0.5);
  REQUIRE(wq.rows.scale_inv.sizes() == at::IntArrayRef({M, 1}));
  REQUIRE(wq.cols.scale_inv.sizes() == at::IntArrayRef({K, 1}));
}

TEST_CASE("fp8: a block's forward and backward in FP8 stay close to the same block in fp32") {
  at::manual_seed(5);
  LlamaConfig c = testing::tiny_config(false, 97);
  LlamaModel m(c, at::kCPU, at::kFloat);
  m.init_random(5);
  std::vector<at::Tensor> parts;
  for (const auto& t : m.blocks()[0].list()) parts.push_back(t.reshape(-1));
  at::Tensor flat = at::cat(parts);
  BlockView w = block_view(c, flat);
  Rope rope(c, at::kCPU);
  const int64_t B = 2, T = 12, N = B * T;
  at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1});
  AttnPlan plan = make_attn_plan(c, rope.inv_freq(), pos, at::Tensor(), at::kFloat, at::kCPU);
  at::Tensor h = at::randn({N, c.hidden_size}), dout = at::randn({N, c.hidden_size});
  for (fp8::Scaling s : {fp8::Scaling::kTensorwise, fp8::Scaling::kRowwise}) {
    Fp8Block q = quantize_block(w, s);
    BlockSaved s32, s8;
    at::Tensor y32 = block_fwd(c, w, h, plan, &s32);
    at::Tensor y8 = block_fwd(c, w, h, plan, &s8, &q);
    REQUIRE(!s8.xn.defined());  // FP8 keeps only the quantised operands of the linears' inputs
    REQUIRE(s8.q_xn.defined());
    at::Tensor g32 = at::zeros_like(flat), g8 = at::zeros_like(flat);
    at::Tensor dh32 = block_bwd(c, w, block_view(c, g32), h, s32, dout, plan);
    at::Tensor dh8 = block_bwd(c, w, block_view(c, g8), h, s8, dout, plan, &q);
    BlockView a = block_view(c, g32), b = block_view(c, g8);
    INFO((s == fp8::Scaling::kTensorwise ? "tensorwise" : "rowwise"));
    REQUIRE(rel_err(y8, y32) < kGemmTol);
    REQUIRE(rel_err(dh8, dh32) < 2 * kGemmTol);
    REQUIRE(rel_err(b.qkv, a.qkv) < 2 * kGemmTol);
    REQUIRE(rel_err(b.o, a.o) < 2 * kGemmTol);
    REQUIRE(rel_err(b.gu, a.gu) < 2 * kGemmTol);
    REQUIRE(rel_err(b.down, a.down) < 2 * kGemmTol);
    REQUIRE(rel_err(b.ln1, a.ln1) < 2 * kGemmTol);
    REQUIRE(rel_err(y8, y32) > 1e-4);
  }
}

// Tensorwise FP8 takes each linear input's amax from the op that wrote the input (trainer/model/ops.h); these
// pin that the amax is the one of the tensor actually cast.
namespace {
float slot_value(const at::Tensor& amax) { return amax.item<float>(); }
float max_abs(const at::Tensor& t) { return t.abs().max().to(at::kFloat).item<float>(); }
}  // namespace

TEST_CASE("fp8: RMSNorm, SwiGLU, RoPE and the RMSNorm backward fold their output's amax") {
  at::manual_seed(13);
  const int64_t N = 24, H = 32, I = 40, nh = 4, nkv = 2, hd = 8;
  const auto bf = at::TensorOptions().dtype(at::kBFloat16);
  at::Tensor x = at::randn({N, H}, bf) * 3, w = at::randn({H}, bf);
  at::Tensor slot = at::zeros({}, at::kFloat);
  auto [y, rstd] = ops::rms_norm_fwd(x, w, 1e-5, slot);
  REQUIRE(slot_value(slot) == max_abs(y));
  REQUIRE(slot_value(slot) > 0);
  // The output is the same as without a slot.
  REQUIRE(at::equal(std::get<0>(ops::rms_norm_fwd(x, w, 1e-5)), y));

  // A running max: a slot already above the output's amax keeps its value.
  at::Tensor high = at::full({}, 1e4, at::kFloat);
  (void)ops::rms_norm_fwd(x, w, 1e-5, high);
  REQUIRE(slot_value(high) == 1e4f);

  at::Tensor gu = at::randn({N, 2 * I}, bf) * 2, da = at::randn({N, I}, bf);
  at::Tensor s_a = at::zeros({}, at::kFloat), s_dgu = at::zeros({}, at::kFloat);
  at::Tensor a = ops::swiglu_fwd(gu, s_a);
  at::Tensor dgu = ops::swiglu_bwd(gu, da, s_dgu);
  REQUIRE(slot_value(s_a) == max_abs(a));
  REQUIRE(slot_value(s_dgu) == max_abs(dgu));

  // The RMSNorm backward with the residual gradient added in: the values of the separate bf16 add, and the
  // amax of that sum (not of the norm's own gradient).
  at::Tensor dy = at::randn({N, H}, bf), res = at::randn({N, H}, bf) * 50;
  at::Tensor dw1 = at::zeros({H}, at::kFloat), dw2 = at::zeros({H}, at::kFloat);
  at::Tensor s_dx = at::zeros({}, at::kFloat);
  at::Tensor plain = ops::rms_norm_bwd(dy, x, w, rstd, dw1).add_(res);
  at::Tensor fused = ops::rms_norm_bwd(dy, x, w, rstd, dw2, res, s_dx);
  REQUIRE(at::equal(plain, fused));
  REQUIRE(at::equal(dw1, dw2));
  REQUIRE(slot_value(s_dx) == max_abs(fused));
  REQUIRE(slot_value(s_dx) > max_abs(ops::rms_norm_bwd(dy, x, w, rstd, dw1)));

  // RoPE rotates q and k only; its amax covers the v heads too (make them the largest).
  const int64_t W = (nh + 2 * nkv) * hd;
  at::Tensor qkv = at::randn({N, W}, bf);
  qkv.narrow(1, (nh + nkv) * hd, nkv * hd).mul_(100);
  at::Tensor pos = at::arange(N, at::kFloat).unsqueeze(1) * at::rand({1, hd / 2});
  at::Tensor emb = at::cat({pos, pos}, -1);
  at::Tensor cos = emb.cos().to(at::kBFloat16), sin = emb.sin().to(at::kBFloat16);
  at::Tensor s_qkv = at::zeros({}, at::kFloat);
  at::Tensor ref = qkv.clone();
  ops::rope_(ref, cos, sin, nh, nkv, hd, /*inverse=*/true);
  ops::rope_(qkv, cos, sin, nh, nkv, hd, /*inverse=*/true, s_qkv);
  REQUIRE(at::equal(ref, qkv));
  REQUIRE(slot_value(s_qkv) == max_abs(qkv));
}

TEST_CASE("fp8: a cast from the producer's amax equals quantize, and a skipped scale fails the bound") {
  at::manual_seed(17);
  const int64_t N = 64, K = 96, M = 80;
  at::Tensor w = at::randn({M, K}) * 0.02;
  fp8::Weight wq = fp8::quantize_weight(w, fp8::Scaling::kTensorwise);
  for (double mag : {1e-4, 1.0, 3e3}) {
    INFO("magnitude " << mag);
    at::Tensor x = at::randn({N, K}) * mag;
    fp8::Quantized a = fp8::quantize(x, fp8::Scaling::kTensorwise, true, true);
    fp8::Quantized b = fp8::quantize_amax(x, x.abs().max().reshape({1}), true, true);
    REQUIRE(at::equal(a.rows.data, b.rows.data));
    REQUIRE(at::equal(a.cols.data, b.cols.data));
    REQUIRE(at::equal(a.rows.scale_inv, b.rows.scale_inv));
    at::Tensor want = at::mm(x, w.t());
    REQUIRE(rel_err(fp8::mm_nt(b.rows, wq.rows, at::kFloat, true), want) < kGemmTol);
    // An amax that is not x's: 448 means scale 1, i.e. no scaling; the small and the large x fail.
    if (mag != 1.0) {
      fp8::Quantized u = fp8::quantize_amax(x, at::full({1}, 448.0f), true, false);
      REQUIRE(rel_err(fp8::mm_nt(u.rows, wq.rows, at::kFloat, true), want) > 4 * kGemmTol);
    }
  }
}

TEST_CASE("fp8: the gradient amax handed from block to block is the amax of the gradient") {
  at::manual_seed(19);
  LlamaConfig c = testing::tiny_config(false, 97);
  LlamaModel m(c, at::kCPU, at::kFloat);
  m.init_random(19);
  std::vector<at::Tensor> parts;
  for (const auto& t : m.blocks()[0].list()) parts.push_back(t.reshape(-1));
  at::Tensor flat = at::cat(parts);
  BlockView w = block_view(c, flat);
  Rope rope(c, at::kCPU);
  const int64_t B = 2, T = 12, N = B * T;
  at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1});
  AttnPlan plan = make_attn_plan(c, rope.inv_freq(), pos, at::Tensor(), at::kFloat, at::kCPU);
  at::Tensor h = at::randn({N, c.hidden_size}), dout = at::randn({N, c.hidden_size});
  Fp8Block q = quantize_block(w, fp8::Scaling::kTensorwise);
  // Two blocks' backward in a row (the same weights): the second takes the first's dh and its amax.
  auto run = [&](bool hand_over, at::Tensor* amax_out) {
    at::Tensor g = at::zeros_like(flat);
    at::Tensor amax;
    at::Tensor dh = dout;
    for (int i = 0; i < 2; ++i) {
      BlockSaved s;
      (void)block_fwd(c, w, h, plan, &s, &q);
      dh = block_bwd(c, w, block_view(c, g), h, s, dh, plan, &q, hand_over ? &amax : nullptr);
      if (i == 0 && amax_out) *amax_out = amax;
    }
    return std::make_pair(dh, g);
  };
  at::Tensor amax1;
  auto [dh_a, g_a] = run(true, &amax1);
  auto [dh_b, g_b] = run(false, nullptr);
  // The first block's returned amax is max |dh| of its gradient, and handing it over changes nothing.
  BlockSaved s;
  (void)block_fwd(c, w, h, plan, &s, &q);
  at::Tensor g0 = at::zeros_like(flat);
  at::Tensor dh1 = block_bwd(c, w, block_view(c, g0), h, s, dout, plan, &q);
  REQUIRE(amax1.defined());
  REQUIRE(slot_value(amax1) == max_abs(dh1));
  REQUIRE(at::equal(dh_a, dh_b));
  REQUIRE(at::equal(g_a, g_b));
  // A wrong amax handed over (1000x too large) changes the result: the handed amax is used.
  at::Tensor wrong = amax1 * 1000;
  BlockSaved s2;
  (void)block_fwd(c, w, h, plan, &s2, &q);
  at::Tensor g2 = at::zeros_like(flat);
  at::Tensor dh_w = block_bwd(c, w, block_view(c, g2), h, s2, dh1, plan, &q, &wrong);
  REQUIRE(!at::equal(dh_w, dh_a));
}
