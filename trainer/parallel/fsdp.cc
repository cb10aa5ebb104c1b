// FSDP full shard: flat-parameter sharding, the checkpointed autograd node that gathers a unit, recomputes
// it in backward and reduce-scatters its gradients, and AdamW / clipping on the shards.
#include "trainer/parallel/fsdp.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/version.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <utility>

#include "core/base/error.h"
#include "trainer/model/ops.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define AIR_FSDP_FUSED_ADAMW 1
#else
#define AIR_FSDP_FUSED_ADAMW 0
#endif

namespace air::train {
namespace {

bool own_adamw_kernel() {
  static const bool on = [] {
    const char* v = std::getenv("AIR_TRAIN_ADAMW");
    const std::string s = v ? v : "air";
    if (s != "air" && s != "aten") throw Error("AIR_TRAIN_ADAMW must be air or aten, not '" + s + "'");
    return s == "air";
  }();
  return on;
}

// What a unit's backward needs besides the saved input: which unit, and the function to recompute.
struct Segment : torch::CustomClassHolder {
  Fsdp* fsdp = nullptr;
  size_t unit = 0;
  UnitFn fn;
};

class UnitFunction : public torch::autograd::Function<UnitFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& trigger,
                            c10::intrusive_ptr<Segment> segment) {
    ctx->save_for_backward({x});
    ctx->saved_data["x_needs_grad"] = x.requires_grad();
    // Grad mode is off inside forward: fn keeps no activations.
    at::Tensor out = segment->fsdp->forward_unit(segment->unit, x, segment->fn);
    ctx->saved_data["segment"] = at::IValue::make_capsule(std::move(segment));
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    at::Tensor x = ctx->get_saved_variables()[0];
    auto segment = c10::static_intrusive_pointer_cast<Segment>(ctx->saved_data["segment"].toCapsule());
    bool x_needs_grad = ctx->saved_data["x_needs_grad"].toBool();
    at::Tensor grad_x = segment->fsdp->backward_unit(segment->unit, x, x_needs_grad, segment->fn, grad_outputs[0]);
    return {grad_x, at::Tensor(), at::Tensor()};
  }
};

at::TensorOptions opts(c10::ScalarType dtype, c10::Device device) {
  return at::TensorOptions().dtype(dtype).device(device);
}

}  // namespace

Fsdp::Fsdp(Dist& dist, FsdpConfig config) : dist_(dist), config_(config) {}

Fsdp::~Fsdp() {
  try {
    drain(0);
    for (auto& u : units_) u->gather_pending.wait();
  } catch (...) {
  }
}

size_t Fsdp::add_unit(std::string name, const NamedTensors& params) {
  at::NoGradGuard no_grad;
  auto unit = std::make_unique<FsdpUnit>();
  unit->name = std::move(name);
  std::unordered_set<const void*> seen;
  for (const auto& [param_name, tensor] : params) {
    if (!tensor.defined() || !seen.insert(tensor.unsafeGetTensorImpl()).second) continue;
    FsdpUnit::Param p;
    p.name = param_name;
    p.tensor = tensor;
    p.shape = tensor.sizes().vec();
    p.offset = unit->numel;
    p.numel = tensor.numel();
    unit->numel += p.numel;
    unit->params.push_back(std::move(p));
  }
  int world = dist_.world_size();
  unit->padded = (unit->numel + world - 1) / world * world;
  unit->shard_numel = unit->padded / world;
  if (unit->padded == 0) throw Error("FSDP unit '" + unit->name + "' has no parameters");

  at::Tensor flat = at::zeros({unit->padded}, opts(c10::kFloat, config_.device));
  for (const auto& p : unit->params) flat.narrow(0, p.offset, p.numel).copy_(p.tensor.reshape(-1));
  if (config_.sync_module_states && world > 1) dist_.broadcast(flat, 0);
  unit->master = flat.narrow(0, dist_.rank() * unit->shard_numel, unit->shard_numel).to(config_.master_dtype).clone();
  // Gradients and AdamW state in the master dtype (bf16 master: 8 bytes per parameter in all, as the peers).
  unit->grad = at::zeros({unit->shard_numel}, opts(config_.master_dtype, config_.device));
  unit->exp_avg = at::zeros_like(unit->grad);
  unit->exp_avg_sq = at::zeros_like(unit->grad);
  unit->trigger = at::zeros({}, opts(c10::kFloat, config_.device)).requires_grad_(true);
  for (auto& p : unit->params) p.tensor.set_data(at::empty({0}, opts(config_.param_dtype, config_.device)));
  units_.push_back(std::move(unit));
  return units_.size() - 1;
}

void Fsdp::start_gather(FsdpUnit& unit) {
  if (unit.gathered.defined()) return;
  unit.gathered = at::empty({unit.padded}, opts(config_.param_dtype, config_.device));
  at::Tensor shard = unit.master.to(config_.param_dtype);
  unit.gather_pending = dist_.all_gather(unit.gathered, shard);
}

bool Fsdp::collectives() const { return dist_.world_size() > 1 || config_.world1_collectives; }

bool Fsdp::zero_copy() const {
  return !collectives() && config_.master_dtype == config_.param_dtype;
}

at::Tensor Fsdp::acquire(size_t index) {
  FsdpUnit& u = *units_.at(index);
  if (zero_copy()) return u.master;  // at world 1 padded == numel: the master is the full parameter
  if (!collectives()) {
    if (!u.cast_valid) {
      u.gathered = u.master.to(config_.param_dtype);
      u.cast_valid = true;
    }
    return u.gathered;
  }
  start_gather(u);
  u.gather_pending.wait();
  return u.gathered;
}

void Fsdp::release_gathered(size_t index) {
  FsdpUnit& u = *units_.at(index);
  if (!collectives() || u.live > 0) return;
  u.gather_pending.wait();
  u.gathered = at::Tensor();
}

namespace {
// Zeroes flat[0, n) except the sorted, disjoint ranges.
void zero_except(const at::Tensor& flat, const std::vector<std::pair<int64_t, int64_t>>& keep) {
  int64_t at = 0;
  for (const auto& [off, len] : keep) {
    if (off > at) flat.narrow(0, at, off - at).zero_();
    at = std::max(at, off + len);
  }
  if (flat.numel() > at) flat.narrow(0, at, flat.numel() - at).zero_();
}
}  // namespace

at::Tensor Fsdp::grad_buffer(size_t index) {
  FsdpUnit& u = *units_.at(index);
  if (zero_copy()) return u.grad;
  if (!u.grad_accum.defined()) {
    if (u.written.empty()) {
      u.grad_accum = at::zeros({u.padded}, opts(config_.param_dtype, config_.device));
    } else {
      u.grad_accum = at::empty({u.padded}, opts(config_.param_dtype, config_.device));
      zero_except(u.grad_accum, u.written);
    }
  }
  return u.grad_accum;
}

void Fsdp::set_written_by_backward(size_t index, std::vector<std::pair<int64_t, int64_t>> ranges) {
  FsdpUnit& u = *units_.at(index);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto& [off, len] = ranges[i];
    if (off < 0 || len < 0 || off + len > u.numel || (i > 0 && off < ranges[i - 1].first + ranges[i - 1].second))
      throw Error("fsdp: unit " + u.name + ": the ranges its backward writes overlap or leave the unit");
  }
  u.written = std::move(ranges);
}

bool Fsdp::backward_writes(size_t index, bool first_micro_batch) const {
  const FsdpUnit& u = *units_.at(index);
  if (u.written.empty()) return false;
  return zero_copy() ? first_micro_batch : true;
}

void Fsdp::reduce_grad(size_t index) {
  FsdpUnit& u = *units_.at(index);
  if (!u.grad_accum.defined()) return;
  at::NoGradGuard no_grad;
  at::Tensor flat = std::exchange(u.grad_accum, at::Tensor());
  if (!collectives()) {
    u.grad.add_(flat);
    return;
  }
  accumulate(u, flat.to(config_.reduce_dtype));
}

void Fsdp::prefetch(size_t index) {
  if (!config_.prefetch || index >= units_.size()) return;
  start_gather(*units_[index]);
}

void Fsdp::materialize(FsdpUnit& unit) {
  if (unit.live++ > 0) return;
  at::NoGradGuard no_grad;
  start_gather(unit);
  unit.gather_pending.wait();
  for (auto& p : unit.params) p.tensor.set_data(unit.gathered.narrow(0, p.offset, p.numel).view(p.shape));
}

void Fsdp::release(FsdpUnit& unit) {
  if (--unit.live > 0) return;
  at::NoGradGuard no_grad;
  at::Tensor empty = at::empty({0}, opts(config_.param_dtype, config_.device));
  for (auto& p : unit.params) p.tensor.set_data(empty);
  unit.gathered = at::Tensor();
}

at::Tensor Fsdp::forward_unit(size_t index, const at::Tensor& x, const UnitFn& fn) {
  FsdpUnit& unit = *units_[index];
  materialize(unit);
  // Prefetch what ran next in the previous micro-batch (the same model runs the same sequence).
  size_t pos = forward_calls_.empty() ? last_calls_.size() : forward_calls_.size() - 1;
  if (pos + 1 < last_calls_.size() && last_calls_[pos] == index)
    prefetch(last_calls_[pos + 1]);
  else
    prefetch(index + 1);
  at::Tensor out = fn(x);
  release(unit);
  return out;
}

at::Tensor Fsdp::run(size_t unit, const at::Tensor& x, UnitFn fn) {
  if (unit >= units_.size()) throw Error("FSDP: no unit " + std::to_string(unit));
  if (at::GradMode::is_enabled()) {
    forward_calls_.push_back(unit);
    backward_left_.push_back(unit);
  }
  auto segment = c10::make_intrusive<Segment>();
  segment->fsdp = this;
  segment->unit = unit;
  segment->fn = std::move(fn);
  return UnitFunction::apply(x, units_[unit]->trigger, std::move(segment));
}

at::Tensor Fsdp::backward_unit(size_t index, const at::Tensor& x, bool x_needs_grad, const UnitFn& fn,
                               const at::Tensor& grad_out) {
  FsdpUnit& unit = *units_[index];
  materialize(unit);
  // Backward visits the units in reverse forward order: prefetch the one before this.
  if (!backward_left_.empty() && backward_left_.back() == index) backward_left_.pop_back();
  if (!backward_left_.empty()) prefetch(backward_left_.back());
  if (backward_left_.empty() && !forward_calls_.empty()) last_calls_ = std::exchange(forward_calls_, {});
  at::Tensor grad_x;
  std::vector<at::Tensor> grads;
  {
    at::AutoGradMode grad_mode(true);
    at::Tensor input = x.detach();
    if (x_needs_grad) input.requires_grad_(true);
    at::Tensor out = fn(input);
    std::vector<at::Tensor> inputs;
    if (x_needs_grad) inputs.push_back(input);
    std::vector<size_t> trained;  // frozen parameters get no gradient
    for (size_t i = 0; i < unit.params.size(); ++i)
      if (unit.params[i].tensor.requires_grad()) inputs.push_back(unit.params[i].tensor), trained.push_back(i);
    if (inputs.empty()) inputs.push_back(unit.trigger);  // nothing trains here; keep autograd happy
    auto got = torch::autograd::grad({out}, inputs, {grad_out}, /*retain_graph=*/false, /*create_graph=*/false,
                                     /*allow_unused=*/true);
    if (x_needs_grad) grad_x = got[0];
    grads.assign(unit.params.size(), at::Tensor());
    for (size_t k = 0; k < trained.size(); ++k) grads[trained[k]] = got[k + (x_needs_grad ? 1 : 0)];
  }
  at::Tensor flat = at::zeros({unit.padded}, opts(config_.reduce_dtype, config_.device));
  {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < unit.params.size(); ++i) {
      const at::Tensor& g = grads[i];
      if (g.defined()) flat.narrow(0, unit.params[i].offset, unit.params[i].numel).copy_(g.reshape(-1));
    }
  }
  grads.clear();
  release(unit);
  accumulate(unit, flat);
  return grad_x;
}

void Fsdp::accumulate(FsdpUnit& unit, at::Tensor flat) {
  at::NoGradGuard no_grad;
  FsdpUnit* u = &unit;
  if (config_.grad_sync == GradSync::kOncePerStep) {
    if (!unit.unsharded_grad.defined()) unit.unsharded_grad = at::zeros({unit.padded}, opts(c10::kFloat, config_.device));
    unit.unsharded_grad.add_(flat);
    if (!sync_now_) return;
    flat = std::exchange(unit.unsharded_grad, at::Tensor()).to(config_.reduce_dtype);
  }
  at::Tensor out = at::empty({unit.shard_numel}, opts(config_.reduce_dtype, config_.device));
  Pending pending = dist_.reduce_scatter(out, flat);
  // Keep two reduce-scatters in flight: the next unit's backward overlaps with this one's communication.
  in_flight_.push_back({std::move(pending), [u, out] { u->grad.add_(out); }});
  drain(2);
}

void Fsdp::drain(size_t keep) {
  while (in_flight_.size() > keep) {
    InFlight f = std::move(in_flight_.front());
    in_flight_.pop_front();
    f.pending.wait();
    at::NoGradGuard no_grad;
    f.finish();
  }
}

void Fsdp::finish_backward() { drain(0); }

at::Tensor Fsdp::grad_norm() {
  finish_backward();
  at::Tensor sum = at::zeros({1}, opts(c10::kFloat, config_.device));
  for (auto& u : units_) sum.add_(at::linalg_vector_norm(u->grad, 2, c10::nullopt, false, c10::kFloat).pow(2));
  dist_.all_reduce_sum(sum);
  return sum.sqrt().squeeze();
}

at::Tensor Fsdp::clip_grad_norm(double max_norm) {
  at::NoGradGuard no_grad;
  at::Tensor norm = grad_norm();
  clip_coef_ = (max_norm / (norm + 1e-6)).clamp_max(1.0);
  return norm;
}

void Fsdp::step(const AdamWConfig& a) {
  at::NoGradGuard no_grad;
  finish_backward();
  const at::Tensor clip_coef = std::exchange(clip_coef_, at::Tensor());  // clip_grad_norm's, applied here
  // A prefetched gather that was never used holds the old weights: drop it.
  for (auto& u : units_)
    if (u->live == 0 && u->gathered.defined()) u->gather_pending.wait(), u->gathered = at::Tensor();
  ++steps_;
  forward_calls_.clear();
  backward_left_.clear();
  for (auto& u : units_)
    if (u->cast_valid) u->cast_valid = false, u->gathered = at::Tensor();
  // bf16 shards on a GPU with our kernels: one pass per shard (ops::adamw_step_), the clipping factor read by
  // the kernel. AIR_TRAIN_ADAMW=aten keeps torch's _fused_adamw_ below (for comparing the two).
  if (config_.fused_adamw && own_adamw_kernel()) {
    bool all = true;
    for (auto& u : units_) all = all && ops::adamw_kernel_for(u->master, u->grad, u->exp_avg, u->exp_avg_sq);
    if (all) {
      for (auto& u : units_)
        ops::adamw_step_(u->master, u->grad, u->exp_avg, u->exp_avg_sq, a.lr, a.beta1, a.beta2, a.weight_decay, a.eps,
                         steps_, clip_coef);
      return;
    }
  }
#if AIR_FSDP_FUSED_ADAMW
  if (config_.fused_adamw && config_.device.is_cuda()) {
    if (!step_t_.defined()) step_t_ = at::zeros({}, opts(c10::kFloat, config_.device));
    step_t_.fill_(static_cast<double>(steps_));
    std::vector<at::Tensor> p, g, m, v, st;
    for (auto& u : units_) {
      p.push_back(u->master);
      g.push_back(u->grad);
      m.push_back(u->exp_avg);
      v.push_back(u->exp_avg_sq);
      st.push_back(step_t_);  // the kernel only reads the count: one tensor serves every shard
    }
    // The kernel divides each gradient by grad_scale (made for loss scaling): 1 / the clipping factor.
    std::optional<at::Tensor> grad_scale;
    if (clip_coef.defined()) grad_scale = clip_coef.reciprocal().reshape({1});
    at::_fused_adamw_(p, g, m, v, {}, st, a.lr, a.beta1, a.beta2, a.weight_decay, a.eps, /*amsgrad=*/false,
                      /*maximize=*/false, grad_scale);
    return;
  }
#endif
  if (clip_coef.defined())
    for (auto& u : units_) u->grad.mul_(clip_coef);
  double bias1 = 1 - std::pow(a.beta1, static_cast<double>(steps_));
  double bias2 = 1 - std::pow(a.beta2, static_cast<double>(steps_));
  for (auto& u : units_) {
    at::Tensor p = u->master.scalar_type() == c10::kFloat ? u->master : u->master.to(c10::kFloat);
    p.mul_(1 - a.lr * a.weight_decay);
    u->exp_avg.mul_(a.beta1).add_(u->grad, 1 - a.beta1);
    u->exp_avg_sq.mul_(a.beta2).addcmul_(u->grad, u->grad, 1 - a.beta2);
    at::Tensor denom = (u->exp_avg_sq.sqrt() / std::sqrt(bias2)).add_(a.eps);
    p.addcdiv_(u->exp_avg, denom, -a.lr / bias1);
    if (!p.is_same(u->master)) u->master.copy_(p);
  }
}

void Fsdp::zero_grad() {
  finish_backward();
  clip_coef_ = at::Tensor();  // a clip without a step: nothing left to apply
  for (auto& u : units_) {
    // Zero copy: the ranges the first micro-batch's backward writes are left as they are (never read first).
    if (zero_copy() && !u->written.empty()) {
      zero_except(u->grad, u->written);
    } else {
      u->grad.zero_();
    }
    if (u->unsharded_grad.defined()) u->unsharded_grad.zero_();
  }
}

NamedTensors Fsdp::gather_full_params(size_t index, c10::ScalarType dtype, bool keep) {
  at::NoGradGuard no_grad;
  FsdpUnit& unit = *units_.at(index);
  // Gather in the master dtype so a consolidated checkpoint keeps full precision before the final cast.
  at::Tensor full = at::empty({unit.padded}, opts(unit.master.scalar_type(), config_.device));
  dist_.all_gather(full, unit.master).wait();
  NamedTensors out;
  if (!keep) return out;
  for (const auto& p : unit.params)
    out.emplace_back(p.name, full.narrow(0, p.offset, p.numel).view(p.shape).to(at::kCPU, dtype).clone());
  return out;
}

}  // namespace air::train
