// AdamW (at::_fused_adamw_ on CUDA with libtorch >= 2.1, else the same update written out), the learning
// rate schedule, and global-norm gradient clipping without a host synchronisation.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/config.h"

namespace air::train {

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};

class AdamW {
 public:
  // `params` are updated in place from their .grad(); state lives beside them (same device and dtype).
  AdamW(std::vector<at::Tensor> params, AdamWOptions o, bool want_fused);
  void step(double lr);
  bool fused() const { return fused_; }
  int64_t steps() const { return steps_; }
  // State for sharded checkpoints: exp_avg, exp_avg_sq per parameter.
  std::vector<at::Tensor>& exp_avg() { return m_; }
  std::vector<at::Tensor>& exp_avg_sq() { return v_; }
  void set_steps(int64_t s);

 private:
  std::vector<at::Tensor> params_, m_, v_, step_t_;
  AdamWOptions o_;
  bool fused_ = false;
  int64_t steps_ = 0;
};

// Whether this build and device can run the fused kernel.
bool fused_adamw_available(const at::Device& d);

// Learning rate for 1-based optimizer step `step`: linear warm-up, then constant or cosine to
// learning_rate * min_lr_ratio at max_steps.
double lr_at(const TrainConfig& c, int64_t step);

// Global L2 norm of `grads` (fp32, 0-dim, on their device); scales them by min(1, max_norm / norm) when
// max_norm > 0. Pass the squared norms of other shards through `extra_sq` (FSDP) when needed.
at::Tensor grad_norm_sq(const std::vector<at::Tensor>& grads);
void scale_grads(const std::vector<at::Tensor>& grads, const at::Tensor& total_norm, double max_norm);

}  // namespace air::train
