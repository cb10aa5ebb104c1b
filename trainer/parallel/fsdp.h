// Fully-sharded data parallelism (FSDP full shard) for libtorch C++ modules: each unit's parameters are
// flattened, padded and split into one slice per rank; a unit is all-gathered only while it runs, its
// activations are recomputed in backward, and its gradients are reduce-scattered back into the slice.
// AdamW and gradient clipping work on the slices. Design and trade-offs: docs/fsdp.md.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainer/parallel/dist.h"

namespace air::train {

// When gradients leave the rank during gradient accumulation.
enum class GradSync {
  kEveryMicroBatch,  // reduce-scatter after every micro-batch into the fp32 shard gradient (lean; default)
  kOncePerStep,      // keep an unsharded fp32 gradient per unit, reduce-scatter once on the last micro-batch
};

struct FsdpConfig {
  c10::ScalarType param_dtype = c10::kFloat;   // compute dtype of gathered parameters (bf16 on GPUs)
  c10::ScalarType master_dtype = c10::kFloat;  // the sharded master weights: fp32 or bf16
  c10::ScalarType reduce_dtype = c10::kFloat;  // dtype of the gradient reduce-scatter
  c10::Device device = c10::kCPU;
  GradSync grad_sync = GradSync::kEveryMicroBatch;
  bool prefetch = true;            // start the next unit's all-gather while this one computes
  bool sync_module_states = true;  // broadcast rank 0's initial weights (ranks may have initialised differently)
  bool fused_adamw = true;         // at::_fused_adamw_ over all shards at once where the build has it (CUDA)
  // At world 1 the collectives are skipped (the master is the full parameter); true runs them anyway, so a
  // profiler trace on one GPU shows the all-gathers and reduce-scatters that several GPUs run.
  bool world1_collectives = false;
};

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;
using UnitFn = std::function<at::Tensor(const at::Tensor&)>;

// One flat parameter: the unit's tensors, laid out back to back and padded to a multiple of the world.
struct FsdpUnit {
  struct Param {
    std::string name;
    at::Tensor tensor;  // the module's leaf; its data points into `gathered` only while the unit is live
    std::vector<int64_t> shape;
    int64_t offset = 0;
    int64_t numel = 0;
  };
  std::string name;
  std::vector<Param> params;
  int64_t numel = 0;        // real elements
  int64_t padded = 0;       // numel rounded up to a multiple of the world size
  int64_t shard_numel = 0;  // padded / world
  at::Tensor master;        // this rank's slice [shard_numel], master dtype
  at::Tensor grad;          // [shard_numel], master dtype
  at::Tensor exp_avg;       // AdamW state [shard_numel], master dtype
  at::Tensor exp_avg_sq;
  at::Tensor grad_accum;    // manual path: param-dtype [padded] gradient of the running backward, pending
  bool cast_valid = false;  // world 1, master dtype != param dtype: `gathered` holds this step's cast
  at::Tensor unsharded_grad;  // fp32 [padded], GradSync::kOncePerStep only
  std::vector<std::pair<int64_t, int64_t>> written;  // set_written_by_backward's ranges, sorted
  at::Tensor gathered;        // param dtype [padded] while live
  Pending gather_pending;
  int live = 0;         // nested users of the gathered parameters
  at::Tensor trigger;   // a scalar that requires grad, so a unit's backward runs even for integer inputs
};

class Fsdp {
 public:
  Fsdp(Dist& dist, FsdpConfig config);
  ~Fsdp();
  Fsdp(const Fsdp&) = delete;
  Fsdp& operator=(const Fsdp&) = delete;

  // Shards a unit. `params` are the leaf tensors its module reads in forward (e.g. named_parameters() of a
  // decoder block); a tensor listed twice (tied weights) is stored once. Afterwards the tensors are empty
  // except while the unit runs. Register units in forward order (blocks first to last, root unit last):
  // the first micro-batch prefetches in that order, later ones in the order the units last ran.
  size_t add_unit(std::string name, const NamedTensors& params);

  // Runs fn(x) with the unit's parameters gathered, as one activation-checkpointed autograd node: only x is
  // kept for backward, where the unit is re-gathered, fn recomputed, and the parameter gradients
  // reduce-scattered. fn must be deterministic (no dropout). x may be an integer tensor (token ids).
  at::Tensor run(size_t unit, const at::Tensor& x, UnitFn fn);

  // The manual path (a model that writes its own backward, trainer/model/block.h). acquire() returns the unit's
  // full flat parameters in the param dtype: at world size 1 with master dtype == param dtype the master
  // itself (no gather, no copy); at world 1 otherwise a cast kept until the next step; at larger worlds an
  // all-gather (started early by prefetch()). release() frees a gathered copy (world > 1 only).
  at::Tensor acquire(size_t unit);
  void release_gathered(size_t unit);
  // A param-dtype [padded] buffer the backward accumulates the unit's gradient into (addmm beta = 1). At
  // world 1 with matching dtypes it is the shard gradient itself; otherwise a zeroed buffer that
  // reduce_grad() then reduce-scatters (or adds) into the shard gradient.
  at::Tensor grad_buffer(size_t unit);
  void reduce_grad(size_t unit);
  // Ranges [offset, length) of a unit's flat gradient that the manual backward writes whole (GEMM beta 0)
  // when backward_writes() says so, instead of adding to them: zero_grad (world 1, zero copy) and
  // grad_buffer (elsewhere) then zero only the rest of the unit (saving a pass over most of the model).
  void set_written_by_backward(size_t unit, std::vector<std::pair<int64_t, int64_t>> ranges);
  // Whether the coming backward into grad_buffer(unit) must write, not add, those ranges: with zero copy in
  // the step's first micro-batch (later ones add to it), elsewhere in every micro-batch (each gets a new
  // buffer). False for a unit without ranges.
  bool backward_writes(size_t unit, bool first_micro_batch) const;
  // World size 1 with master dtype == param dtype: parameters and gradients live in one place.
  bool zero_copy() const;
  // Whether gathers and reduce-scatters run: at world > 1, or at world 1 when world1_collectives asks.
  bool collectives() const;

  // GradSync::kOncePerStep: say whether the coming backward is the step's last micro-batch.
  void set_grad_sync(bool sync) { sync_now_ = sync; }

  // Waits for every reduce-scatter in flight (called by clip_grad_norm and step too).
  void finish_backward();
  // Global L2 norm of the gradients (sum of squares over shards, all-reduced); the gradients are scaled to
  // max_norm when above, by the next step(): the fused AdamW kernel takes the factor as its grad_scale (one
  // pass over the gradients fewer: 4.7% of an 8B step), the manual update multiplies first. Returns the
  // norm before clipping as a 0-dim tensor on the device (no host sync).
  at::Tensor clip_grad_norm(double max_norm);
  // Global L2 norm without clipping.
  at::Tensor grad_norm();
  void step(const AdamWConfig& adamw);
  void zero_grad();

  // Collective: every rank calls it; returns the unit's full parameters (CPU, `dtype`) by name, or nothing
  // where keep is false (ranks that only take part in the gather).
  NamedTensors gather_full_params(size_t unit, c10::ScalarType dtype, bool keep = true);

  Dist& dist() { return dist_; }
  const FsdpConfig& config() const { return config_; }
  std::vector<std::unique_ptr<FsdpUnit>>& units() { return units_; }
  int64_t optimizer_steps() const { return steps_; }
  void set_optimizer_steps(int64_t steps) { steps_ = steps; }

  // Used by the autograd node (fsdp.cc).
  at::Tensor forward_unit(size_t unit, const at::Tensor& x, const UnitFn& fn);
  void materialize(FsdpUnit& unit);
  void release(FsdpUnit& unit);
  void prefetch(size_t unit);
  at::Tensor backward_unit(size_t unit, const at::Tensor& x, bool x_needs_grad, const UnitFn& fn,
                           const at::Tensor& grad_out);

 private:
  void start_gather(FsdpUnit& unit);
  void accumulate(FsdpUnit& unit, at::Tensor flat_grad);
  void drain(size_t keep);

  Dist& dist_;
  FsdpConfig config_;
  std::vector<std::unique_ptr<FsdpUnit>> units_;
  struct InFlight {
    Pending pending;
    std::function<void()> finish;
  };
  std::deque<InFlight> in_flight_;
  std::vector<size_t> forward_calls_;  // units run in this micro-batch's forward, in order
  std::vector<size_t> backward_left_;  // of those, the ones whose backward has not run yet
  std::vector<size_t> last_calls_;     // the previous micro-batch's forward_calls_
  bool sync_now_ = true;
  int64_t steps_ = 0;
  at::Tensor step_t_;  // fused AdamW's step count (read, not changed, by the kernel)
  at::Tensor clip_coef_;  // clip_grad_norm's factor (<= 1), applied by the next step(); undefined: none
};

}  // namespace air::train
