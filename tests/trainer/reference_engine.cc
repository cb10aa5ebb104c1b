// The autograd reference engine (tests only): the whole model on one device, fp32 (or bf16) master
// weights, compute in the compute dtype through differentiable casts, per-block activation recomputation,
// AdamW. The FSDP engine's hand-written backward is checked against it step for step.
#include "tests/trainer/reference_engine.h"

#include "core/base/error.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/optim/adamw.h"

namespace air::train::testing {
namespace {

class ReferenceEngine : public Engine {
 public:
  explicit ReferenceEngine(const EngineSetup& s)
      : s_(s),
        model_(build_model(s, s.device, s.master_dtype)),
        rope_(s.model_config, s.device),
        opt_(model_.parameters(),
             AdamWOptions{s.config.betas[0], s.config.betas[1], s.config.eps, s.config.weight_decay},
             s.config.fused_adamw != "off") {
    if (s.config.fused_adamw == "on" && !opt_.fused())
      throw Error("fused_adamw: on, but at::_fused_adamw_ is not available here (needs libtorch >= 2.1 and CUDA)");
    model_.set_requires_grad(true);
  }

  at::Tensor forward_backward(const MicroBatch& mb, double loss_scale) override {
    const auto dev = s_.device;
    at::Tensor seg = mb.segments.defined() ? mb.segments.to(dev) : at::Tensor();
    at::Tensor logits = forward_logits(model_, rope_, mb.input_ids.to(dev), mb.positions.to(dev), seg,
                                       s_.compute_dtype, s_.config.activation_checkpointing != "false");
    at::Tensor loss = loss_sum(logits, mb.targets.to(dev));
    (loss * loss_scale).backward();
    return loss.detach();
  }

  at::Tensor clip_grad_norm(double max_norm) override {
    std::vector<at::Tensor> grads;
    for (const auto& p : model_.parameters()) grads.push_back(p.grad());
    at::Tensor norm = grad_norm_sq(grads).sqrt();
    scale_grads(grads, norm, max_norm);
    return norm;
  }

  void optimizer_step(double lr) override { opt_.step(lr); }

  void zero_grad() override {
    for (auto& p : model_.parameters()) p.mutable_grad().reset();
  }

  at::Tensor all_reduce_sum(const at::Tensor& t) override { return t; }

  void save(const SaveOptions& o) override { save_checkpoint(model_, o); }

  void save_sharded(const std::string&, const LoopState&) override {
    throw Error("the reference engine keeps no sharded checkpoints");
  }
  bool load_sharded(const std::string&, LoopState&) override { return false; }

  std::string describe() const override {
    return std::string("reference engine (autograd) on ") + s_.device.str() + ", master " + c10::toString(s_.master_dtype) +
           ", compute " + c10::toString(s_.compute_dtype) + ", AdamW " + (opt_.fused() ? "fused" : "unfused") +
           ", attention " + attention_kernel_name() +
           (s_.config.activation_checkpointing != "false" ? ", activation recomputation per block" : "");
  }

 private:
  EngineSetup s_;
  LlamaModel model_;
  Rope rope_;
  AdamW opt_;
};

}  // namespace

std::unique_ptr<Engine> make_reference_engine(const EngineSetup& s) { return std::make_unique<ReferenceEngine>(s); }

}  // namespace air::train::testing
