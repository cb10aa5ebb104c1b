// ATen reference paths of trainer/model/ops.h, and the dispatch to the CUDA kernels (trainer/cuda/ops_cuda.h).
#include "trainer/model/ops.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#ifndef AIR_TRAIN_CUDA_KERNELS
#define AIR_TRAIN_CUDA_KERNELS 0
#endif

#if AIR_TRAIN_CUDA_KERNELS
#include "trainer/cuda/gemm_cuda.h"
#include "trainer/cuda/ops_cuda.h"
#endif

namespace air::train::ops {
namespace {

std::atomic<bool> g_use_kernels{true};

bool kernels_for(const at::Tensor& t) {
#if AIR_TRAIN_CUDA_KERNELS
  return g_use_kernels.load() && t.is_cuda() && (t.scalar_type() == at::kBFloat16);
#else
  (void)t;
  return false;
#endif
}

}  // namespace

void fold_amax(const at::Tensor& amax, const at::Tensor& x) {
  if (!amax.defined()) return;
  if (x.numel() == 0) return;
  // amax of the stored values, exact in fp32 (every bf16 value is an fp32 value); NaN propagates.
  at::Tensor m = at::linalg_vector_norm(x, INFINITY, c10::nullopt, false, at::kFloat);
  amax.copy_(at::maximum(amax, m));  // maximum propagates NaN
}

bool adamw_kernel_for(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m, const at::Tensor& v) {
  for (const at::Tensor* t : {&p, &g, &m, &v})
    if (!kernels_for(*t) || !t->is_contiguous() || t->numel() != p.numel() ||
        reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 != 0)
      return false;
  return true;
}

void adamw_step_(at::Tensor& p, const at::Tensor& g, at::Tensor& m, at::Tensor& v, double lr, double beta1,
                 double beta2, double weight_decay, double eps, int64_t step, const at::Tensor& grad_mul) {
#if AIR_TRAIN_CUDA_KERNELS
  if (adamw_kernel_for(p, g, m, v)) return cuda::adamw_step_(p, g, m, v, lr, beta1, beta2, weight_decay, eps, step, grad_mul);
#endif
  at::Tensor pf = p.to(at::kFloat), gf = g.to(at::kFloat), mf = m.to(at::kFloat), vf = v.to(at::kFloat);
  if (grad_mul.defined()) gf = gf * grad_mul.to(gf.device(), at::kFloat);
  pf.mul_(1 - lr * weight_decay);
  mf.mul_(beta1).add_(gf, 1 - beta1);
  vf.mul_(beta2).addcmul_(gf, gf, 1 - beta2);
  const double bias1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias2 = 1 - std::pow(beta2, static_cast<double>(step));
  pf.addcdiv_(mf, vf.sqrt().div_(std::sqrt(bias2)).add_(eps), -lr / bias1);
  p.copy_(pf);
  m.copy_(mf);
  v.copy_(vf);
}

void gemm_into(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha,
               double beta) {
  const bool has_c = c.defined() && beta != 0;
#if AIR_TRAIN_CUDA_KERNELS
  auto env_is = [](const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v && std::string(v) == value;
  };
  static const bool aten = env_is("AIR_TRAIN_GEMM", "aten");
  static const cuda::GemmPick pick = env_is("AIR_TRAIN_GEMM_TUNE", "0") ? cuda::GemmPick::heuristic : cuda::GemmPick::tuned;
  if (!aten && kernels_for(out) &&
      cuda::gemm_lt(out, a, b, has_c ? c : at::Tensor(), static_cast<float>(alpha), has_c ? static_cast<float>(beta) : 0.f,
                    pick))
    return;
#endif
  if (!has_c) {
    at::addmm_out(const_cast<at::Tensor&>(out), out, a, b, /*beta=*/0, alpha);  // beta 0: out's contents are not read
  } else if (c.is_same(out)) {
    const_cast<at::Tensor&>(out).addmm_(a, b, beta, alpha);
  } else {
    at::addmm_out(const_cast<at::Tensor&>(out), c, a, b, beta, alpha);
  }
}

at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  at::Tensor out = at::empty({a.size(0), b.size(1)}, a.options());
  gemm_into(out, a, b, c);
  return out;
}

bool have_cuda_kernels() { return AIR_TRAIN_CUDA_KERNELS != 0; }
void set_use_cuda_kernels(bool on) { g_use_kernels = on; }

std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(const at::Tensor& x, const at::Tensor& weight, double eps,
                                                const at::Tensor& amax, const at::Tensor& out) {
#if AIR_TRAIN_CUDA_KERNELS
  if (kernels_for(x) && weight.scalar_type() == at::kBFloat16) return cuda::rms_norm_fwd(x, weight, eps, amax, out);
#endif
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor rstd = at::rsqrt(xf.pow(2).mean(-1) + eps);
  at::Tensor y = (weight * (xf * rstd.unsqueeze(-1)).to(x.scalar_type())).to(x.scalar_type());
  fold_amax(amax, y);
  if (out.defined()) return {out.copy_(y), rstd};
  return {y, rstd};
}

at::Tensor rms_norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& rstd,
                        const at::Tensor& dweight, const at::Tensor& residual, const at::Tensor& amax,
                        const at::Tensor& out) {
#if AIR_TRAIN_CUDA_KERNELS
  if (kernels_for(x) && weight.scalar_type() == at::kBFloat16)
    return cuda::rms_norm_bwd(dy, x, weight, rstd, dweight, residual, amax, out);
#endif
  // n = x * rstd; y = w * n. dw = sum(dy * n); dn = dy * w; dx = rstd * (dn - n * mean(dn * n)).
  at::Tensor r = rstd.unsqueeze(-1);
  at::Tensor n = x.to(at::kFloat) * r;
  at::Tensor dyf = dy.to(at::kFloat);
  if (dweight.defined()) dweight.add_((dyf * n.to(x.scalar_type()).to(at::kFloat)).sum(0).to(dweight.scalar_type()));
  at::Tensor dn = dyf * weight.to(at::kFloat);
  at::Tensor dx = (r * (dn - n * (dn * n).mean(-1, true))).to(x.scalar_type());
  if (residual.defined()) dx.add_(residual);
  fold_amax(amax, dx);
  if (out.defined()) return out.copy_(dx);
  return dx;
}

std::tuple<at::Tensor, at::Tensor> head_rms_norm_fwd_(at::Tensor& qkv, int64_t col0, int64_t heads, int64_t hd,
                                                      const at::Tensor& weight, double eps) {
#if AIR_TRAIN_CUDA_KERNELS
  if (kernels_for(qkv)) {
    auto r = cuda::head_rms_norm_fwd_(qkv, col0, heads, hd, weight, eps);
    if (std::get<0>(r).defined()) return r;
  }
#endif
  const int64_t N = qkv.size(0);
  at::Tensor part = qkv.narrow(1, col0, heads * hd);
  at::Tensor x = part.contiguous().view({N * heads, hd});
  auto [y, rstd] = rms_norm_fwd(x, weight, eps);
  part.copy_(y.view({N, heads * hd}));
  return {x, rstd};
}

void head_rms_norm_bwd_(at::Tensor& dqkv, int64_t col0, int64_t heads, int64_t hd, const at::Tensor& x,
                        const at::Tensor& weight, const at::Tensor& rstd, const at::Tensor& dweight) {
#if AIR_TRAIN_CUDA_KERNELS
  if (kernels_for(dqkv) && cuda::head_rms_norm_bwd_(dqkv, col0, heads, hd, x, weight, rstd, dweight)) return;
#endif
  const int64_t N = dqkv.size(0);
  at::Tensor part = dqkv.narrow(1, col0, heads * hd);
  at::Tensor dx = rms_norm_bwd(part.contiguous().view({N * heads, hd}), x, weight, rstd, dweight);
  part.copy_(dx.view({N, heads * hd}));
}

at::Tensor glu_fwd(const at::Tensor& gu, GluAct act, const at::Tensor& amax) {
#if AIR_TRAIN_CUDA_KERNELS
  if (kernels_for(gu)) return cuda::glu_fwd(gu, act == GluAct::kGeluTanh, amax);
#endif
  const int64_t I = gu.size(-1) / 2;
  at::Tensor gate = gu.narrow(-1, 0, I);
  at::Tensor a = (act == GluAct::kSilu ? at::silu(gate) : at::gelu(gate, "tanh")) * gu.narrow(-1, I, I);
  fold_amax(amax, a);
  return a;
}

at::Tensor glu_bwd(const at::Tensor& gu, const at::Tensor& da, GluAct act, const at::Tensor& amax) {
#if AIR_TRAIN_CUDA_KERNELS
  if (kernels_for(gu)) return cuda::glu_bwd(gu, da, act == GluAct::kGeluTanh, amax);
#endif
  const int64_t I = gu.size(-1) / 2;
  at::Tensor g = gu.narrow(-1, 0, I).to(at::kFloat), u = gu.narrow(-1, I, I).to(at::kFloat);
  at::Tensor daf = da.to(at::kFloat);
  at::Tensor dg, du;
  if (act == GluAct::kSilu) {
    at::Tensor sig = at::sigmoid(g);
    dg = daf * u * sig * (1 + g * (1 - sig));
    du = daf * (g * sig);
  } else {
    dg = at::gelu_backward(daf * u, g, "tanh");
    du = daf * at::gelu(g, "tanh");
  }
  at::Tensor dgu = at::cat({dg, du}, -1).to(gu.scalar_type());
  fold_amax(amax, dgu);
  return dgu;
}

at::Tensor cross_entropy_fwd_bwd_(at::Tensor& logits, const at::Tensor& targets, double scale) {
#if AIR_TRAIN_CUDA_KERNELS
  if (kernels_for(logits)) return cuda::cross_entropy_fwd_bwd_(logits, targets, scale);
#endif
  const int64_t n = logits.size(0);
  at::Tensor lf = logits.to(at::kFloat);
  at::Tensor valid = targets.ne(-100);
  at::Tensor safe = targets.clamp_min(0).unsqueeze(1);
  at::Tensor lse = at::logsumexp(lf, {1}, /*keepdim=*/true);
  at::Tensor loss = ((lse - lf.gather(1, safe)).squeeze(1) * valid).sum();
  // d(loss * scale) / dlogits = scale * (softmax - onehot) on rows with a target, 0 elsewhere.
  at::Tensor p = lf.sub_(lse).exp_();
  p.scatter_add_(1, safe, at::full({n, 1}, -1.0, p.options()));
  p.mul_((valid.to(at::kFloat) * scale).unsqueeze(1));
  logits.copy_(p);
  return loss;
}

at::Tensor rope_from_heads(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv, const at::Tensor& cos,
                           const at::Tensor& sin, bool inverse, const at::Tensor& amax) {
#if AIR_TRAIN_CUDA_KERNELS
  // AIR_TRAIN_ROPE_FROM_HEADS=0: the copies and rope_ below on CUDA too (the bench's comparison).
  static const bool unfused = [] {
    const char* v = std::getenv("AIR_TRAIN_ROPE_FROM_HEADS");
    return v && std::string(v) == "0";
  }();
  if (kernels_for(dq) && !unfused) {
    at::Tensor fused = cuda::rope_from_heads(dq, dk, dv, cos, sin, inverse, amax);
    if (fused.defined()) return fused;
  }
#endif
  const int64_t B = dq.size(0), T = dq.size(2), hd = dq.size(3), nh = dq.size(1), nkv = dk.size(1);
  at::Tensor out = at::empty({B * T, (nh + 2 * nkv) * hd}, dq.options());
  int64_t off = 0;
  for (const at::Tensor* p : {&dq, &dk, &dv}) {
    const int64_t heads = p->size(1);
    out.narrow(1, off, heads * hd).view({B, T, heads, hd}).transpose(1, 2).copy_(*p);
    off += heads * hd;
  }
  rope_(out, cos, sin, nh, nkv, hd, inverse, amax);
  return out;
}

void rope_(at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin, int64_t nh, int64_t nkv, int64_t hd,
           bool inverse, const at::Tensor& amax) {
#if AIR_TRAIN_CUDA_KERNELS
  if (kernels_for(qkv)) return cuda::rope_(qkv, cos, sin, nh, nkv, hd, inverse, amax);
#endif
  const int64_t N = qkv.size(0), half = hd / 2;
  // [N, nh + nkv, hd]: the q and k heads, rotated together.
  at::Tensor x = qkv.narrow(1, 0, (nh + nkv) * hd).view({N, nh + nkv, hd});
  at::Tensor c = cos.view({N, 1, hd}).to(at::kFloat), s = sin.view({N, 1, hd}).to(at::kFloat);
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor x1 = xf.narrow(-1, 0, half), x2 = xf.narrow(-1, half, half);
  // forward: out = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
  // inverse: out = x * cos - rotate_half(x) * sin... as the transpose: [x1 c1 + x2 s2, x2 c2 - x1 s1].
  at::Tensor c1 = c.narrow(-1, 0, half), c2 = c.narrow(-1, half, half);
  at::Tensor s1 = s.narrow(-1, 0, half), s2 = s.narrow(-1, half, half);
  at::Tensor o1, o2;
  if (!inverse) {
    o1 = x1 * c1 - x2 * s1;
    o2 = x2 * c2 + x1 * s2;
  } else {
    o1 = x1 * c1 + x2 * s2;
    o2 = x2 * c2 - x1 * s1;
  }
  x.copy_(at::cat({o1, o2}, -1));
  fold_amax(amax, qkv);
}

}  // namespace air::train::ops
