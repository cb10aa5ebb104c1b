// AdamW, LR schedule and clipping. The manual AdamW follows torch.optim.AdamW's update exactly.
#include "trainer/optim/adamw.h"

#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include <cmath>

#include "core/base/error.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define AIR_HAVE_FUSED_ADAMW 1
#else
#define AIR_HAVE_FUSED_ADAMW 0
#endif

namespace air::train {

bool fused_adamw_available(const at::Device& d) { return AIR_HAVE_FUSED_ADAMW && d.is_cuda(); }

AdamW::AdamW(std::vector<at::Tensor> params, AdamWOptions o, bool want_fused) : params_(std::move(params)), o_(o) {
  at::NoGradGuard no_grad;
  for (const auto& p : params_) {
    m_.push_back(at::zeros_like(p));
    v_.push_back(at::zeros_like(p));
  }
  fused_ = want_fused && !params_.empty() && fused_adamw_available(params_[0].device());
  if (fused_)
    for (const auto& p : params_) step_t_.push_back(at::zeros({}, p.options().dtype(at::kFloat)));
}

void AdamW::set_steps(int64_t s) {
  steps_ = s;
  for (auto& t : step_t_) t.fill_(static_cast<double>(s));
}

void AdamW::step(double lr) {
  at::NoGradGuard no_grad;
  ++steps_;
  std::vector<at::Tensor> grads;
  for (const auto& p : params_) grads.push_back(p.grad().defined() ? p.grad() : at::zeros_like(p));
#if AIR_HAVE_FUSED_ADAMW
  if (fused_) {
    at::_foreach_add_(step_t_, 1);
    at::_fused_adamw_(params_, grads, m_, v_, {}, step_t_, lr, o_.beta1, o_.beta2, o_.weight_decay, o_.eps,
                      /*amsgrad=*/false, /*maximize=*/false);
    return;
  }
#endif
  const double bc1 = 1 - std::pow(o_.beta1, static_cast<double>(steps_));
  const double bc2 = 1 - std::pow(o_.beta2, static_cast<double>(steps_));
  const double step_size = lr / bc1, bc2_sqrt = std::sqrt(bc2);
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& p = params_[i];
    p.mul_(1 - lr * o_.weight_decay);
    m_[i].lerp_(grads[i], 1 - o_.beta1);
    v_[i].mul_(o_.beta2).addcmul_(grads[i], grads[i], 1 - o_.beta2);
    at::Tensor denom = (v_[i].sqrt() / bc2_sqrt).add_(o_.eps);
    p.addcdiv_(m_[i], denom, -step_size);
  }
}

double lr_at(const TrainConfig& c, int64_t step) {
  if (c.warmup_steps > 0 && step <= c.warmup_steps)
    return c.learning_rate * static_cast<double>(step) / static_cast<double>(c.warmup_steps);
  if (c.lr_schedule == "constant") return c.learning_rate;
  const double span = static_cast<double>(std::max<int64_t>(1, c.max_steps - c.warmup_steps));
  const double progress = std::min(1.0, static_cast<double>(step - c.warmup_steps) / span);
  const double floor = c.learning_rate * c.min_lr_ratio;
  return floor + (c.learning_rate - floor) * 0.5 * (1 + std::cos(M_PI * progress));
}

at::Tensor grad_norm_sq(const std::vector<at::Tensor>& grads) {
  std::vector<at::Tensor> sq;
  for (const auto& g : grads)
    if (g.defined()) sq.push_back(g.to(at::kFloat).pow(2).sum());
  if (sq.empty()) return at::zeros({}, at::kFloat);
  return at::stack(sq).sum();
}

void scale_grads(const std::vector<at::Tensor>& grads, const at::Tensor& total_norm, double max_norm) {
  if (max_norm <= 0) return;
  at::NoGradGuard no_grad;
  at::Tensor coef = (max_norm / (total_norm + 1e-6)).clamp_max(1.0);
  for (const auto& g : grads)
    if (g.defined()) const_cast<at::Tensor&>(g).mul_(coef);
}

}  // namespace air::train
