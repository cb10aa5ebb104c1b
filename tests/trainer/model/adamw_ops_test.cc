// ops::adamw_step_ (trainer/model/ops.h): its ATen path (the reference the CUDA kernel is checked against by
// air-train-check --kernels) equals torch.optim.AdamW's update written out element by element in double, with
// and without the clipping factor, and the factor is not ignored.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <cmath>
#include <vector>

#include "trainer/model/ops.h"

using namespace air::train;

namespace {

struct State {
  std::vector<double> p, g, m, v;
};

// torch.optim.AdamW (decoupled weight decay), one element at a time in double.
void adamw_double(State& s, double lr, double b1, double b2, double wd, double eps, int64_t step, double mul) {
  const double bc1 = 1 - std::pow(b1, static_cast<double>(step)), bc2 = 1 - std::pow(b2, static_cast<double>(step));
  for (size_t i = 0; i < s.p.size(); ++i) {
    const double g = s.g[i] * mul;
    s.p[i] *= 1 - lr * wd;
    s.m[i] = b1 * s.m[i] + (1 - b1) * g;
    s.v[i] = b2 * s.v[i] + (1 - b2) * g * g;
    s.p[i] -= lr / bc1 * s.m[i] / (std::sqrt(s.v[i]) / std::sqrt(bc2) + eps);
  }
}

std::vector<double> values(const at::Tensor& t) {
  at::Tensor d = t.to(at::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// max |got - want| over max |want| (elementwise relative errors blow up where a moment crosses zero).
double max_rel(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return diff / scale;
}

}  // namespace

TEST_CASE("ops: adamw_step_ equals torch.optim.AdamW's update, with the clipping factor applied") {
  at::manual_seed(3);
  const int64_t n = 1037;  // not a multiple of the kernel's 8-element vectors
  const double lr = 1e-3, b1 = 0.9, b2 = 0.95, wd = 0.1, eps = 1e-8;
  at::Tensor p0 = at::randn({n}) * 0.02, g = at::randn({n}) * 1e-3, m0 = at::randn({n}) * 1e-4;
  at::Tensor v0 = at::rand({n}) * 1e-6 + 1e-8;
  for (double mul : {1.0, 0.37}) {
    at::Tensor p = p0.clone(), m = m0.clone(), v = v0.clone();
    at::Tensor grad_mul = mul == 1.0 ? at::Tensor() : at::full({}, mul, at::kFloat);
    State s{values(p0), values(g), values(m0), values(v0)};
    for (int64_t step = 1; step <= 3; ++step) {
      ops::adamw_step_(p, g, m, v, lr, b1, b2, wd, eps, step, grad_mul);
      adamw_double(s, lr, b1, b2, wd, eps, step, mul);
    }
    INFO("grad_mul " << mul);
    REQUIRE(max_rel(values(m), s.m) < 1e-5);
    REQUIRE(max_rel(values(v), s.v) < 1e-5);
    REQUIRE(max_rel(values(p), s.p) < 1e-5);
  }
  // The factor changes the moments: running without it does not give the clipped result.
  at::Tensor p = p0.clone(), m = m0.clone(), v = v0.clone();
  ops::adamw_step_(p, g, m, v, lr, b1, b2, wd, eps, 1);
  State s{values(p0), values(g), values(m0), values(v0)};
  adamw_double(s, lr, b1, b2, wd, eps, 1, 0.37);
  REQUIRE(max_rel(values(m), s.m) > 1e-2);
}

TEST_CASE("ops: adamw_step_ on bf16 state rounds each stored value once") {
  at::manual_seed(4);
  const int64_t n = 515;
  at::Tensor p0 = at::randn({n}) * 0.02, g = at::randn({n}) * 1e-3, m0 = at::randn({n}) * 1e-4, v0 = at::rand({n}) * 1e-6;
  auto bf = [](const at::Tensor& t) { return t.to(at::kBFloat16); };
  at::Tensor p = bf(p0), gb = bf(g), m = bf(m0), v = bf(v0);
  ops::adamw_step_(p, gb, m, v, 1e-3, 0.9, 0.95, 0.1, 1e-8, 2, at::full({}, 0.5, at::kFloat));
  // The same step in fp32 from the bf16 values, rounded to bf16 at the end: equal.
  at::Tensor pf = bf(p0).to(at::kFloat), mf = bf(m0).to(at::kFloat), vf = bf(v0).to(at::kFloat);
  ops::adamw_step_(pf, gb.to(at::kFloat), mf, vf, 1e-3, 0.9, 0.95, 0.1, 1e-8, 2, at::full({}, 0.5, at::kFloat));
  REQUIRE(at::equal(m, bf(mf)));
  REQUIRE(at::equal(v, bf(vf)));
  REQUIRE(at::equal(p, bf(pf)));
}

// ops::gemm_into / gemm (the block's and LoRA's GEMMs; on the GPU through cuBLASLt, checked against this ATen
// path by air-train-check --kernels): alpha and beta, c read and left alone, c as the output itself, no c, and
// strided views (transposed operands, the left columns of a wider output).
TEST_CASE("ops: gemm_into computes alpha a b + beta c without touching c, in place and into strided views") {
  at::manual_seed(5);
  const at::Tensor a = at::randn({7, 5}, at::kDouble), b = at::randn({5, 3}, at::kDouble),
                   c = at::randn({7, 3}, at::kDouble);
  const at::Tensor ab = at::mm(a, b);
  // No c: out's old contents (NaN here) must not leak in.
  at::Tensor out = at::full({7, 3}, NAN, at::kDouble);
  ops::gemm_into(out, a, b, {}, 2.0);
  REQUIRE(at::allclose(out, 2 * ab));
  // c beside out: out = 0.5 ab + 3 c; c unchanged.
  const at::Tensor c0 = c.clone();
  ops::gemm_into(out, a, b, c, 0.5, 3.0);
  REQUIRE(at::allclose(out, 0.5 * ab + 3 * c0));
  REQUIRE(at::equal(c, c0));
  // c is out: accumulate in place (the adapters' gradients).
  at::Tensor acc = c.clone();
  ops::gemm_into(acc, a, b, acc, 0.25, 1.0);
  REQUIRE(at::allclose(acc, c0 + 0.25 * ab));
  // Transposed operands and a strided output (the left columns of a wider buffer; the rest untouched).
  at::Tensor at_ = a.t().contiguous(), wide = at::full({7, 8}, 9.0, at::kDouble);
  at::Tensor left = wide.narrow(1, 0, 3);
  ops::gemm_into(left, at_.t(), b.t().contiguous().t());
  REQUIRE(at::allclose(left, ab));
  REQUIRE((wide.narrow(1, 3, 5) == 9.0).all().item<bool>());
  // gemm: a new tensor, with and without c.
  REQUIRE(at::allclose(ops::gemm(a, b), ab));
  REQUIRE(at::allclose(ops::gemm(a, b, c), ab + c0));
}
