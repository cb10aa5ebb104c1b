// The FSDP engine: builds the Llama model on the CPU, shards it unit by unit onto the device (root unit
// first, then the blocks, so prefetching follows the forward order), and runs each micro-batch as
// embed -> blocks -> head + loss, every piece a checkpointed FSDP unit.
#include "trainer/parallel/engine.h"

#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>

#include "core/base/error.h"
#include "trainer/model/block.h"
#include "trainer/parallel/dist.h"
#include "trainer/parallel/fsdp.h"
#include "trainer/parallel/recompute.h"
#include "trainer/metrics.h"
#include "trainer/model/ops.h"

namespace air::train {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool write_grads() {
  const char* v = std::getenv("AIR_TRAIN_WRITE_GRADS");
  return !(v && std::string(v) == "0");
}

// AIR_TRAIN_SM_CARVEOUT=N: cuBLAS GEMMs leave N streaming multiprocessors free, so that communication
// kernels (NCCL's, or a device copy) can run beside them instead of waiting for a GEMM that holds every SM.
// An experiment for the N-GPU overlap (docs/performance.md); off by default.
void apply_sm_carveout() {
  const char* v = std::getenv("AIR_TRAIN_SM_CARVEOUT");
  if (!v || !*v) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  at::globalContext()._setSMCarveout_EXPERIMENTAL(std::atoi(v));
#endif
}

class FsdpEngine : public Engine {
 public:
  explicit FsdpEngine(const EngineSetup& s)
      : s_(s),
        dist_(Dist::init(dist_env_from_environment(), engine_backend(s.device))),
        // Built where it trains (a GPU initialises 8B random weights in seconds), then sharded unit by unit.
        model_(build_model(s, s.device, s.compute_dtype)),
        rope_(s.model_config, s.device) {
    FsdpConfig fc;
    fc.param_dtype = s.compute_dtype;
    fc.master_dtype = s.master_dtype;
    fc.reduce_dtype = at::kFloat;
    fc.device = s.device;
    // Every rank builds the same weights (same files or same seed): no broadcast needed.
    fc.sync_module_states = false;
    if (s.config.grad_sync == "step") fc.grad_sync = GradSync::kOncePerStep;
    fc.fused_adamw = s.config.fused_adamw != "off";
    fc.world1_collectives = world1_collectives();
    apply_sm_carveout();
    // The head's logits chunk: about 1 GiB of bf16 logits at a time (one chunk for 4 x 1024 rows at 128k vocab).
    chunk_rows_ = head_chunk_rows(s.model_config);
    fsdp_ = std::make_unique<Fsdp>(*dist_, fc);

    model_.set_requires_grad(true);
    NamedTensors root;
    std::vector<NamedTensors> blocks(model_.blocks().size());
    for (auto& [name, t] : model_.named_parameters()) {
      if (starts_with(name, "model.layers.")) {
        size_t layer = std::stoul(name.substr(13));
        blocks.at(layer).emplace_back(name, t);
      } else {
        root.emplace_back(name, t);
      }
    }
    fsdp_->add_unit("root", root);
    for (size_t l = 0; l < blocks.size(); ++l) {
      fsdp_->add_unit("layer" + std::to_string(l), blocks[l]);
      // The linears' weight gradients are written by the step's first backward (block_bwd's write_grads), so
      // zero_grad need not clear them (AIR_TRAIN_WRITE_GRADS=0: zeroed and added, for the comparison).
      if (write_grads()) fsdp_->set_written_by_backward(1 + l, block_linear_ranges(s.model_config));
    }
    if (fp8_) {
      fp8_blocks_.resize(blocks.size());
      fp8_fresh_.assign(blocks.size(), false);
    }
  }

  // precision: fp8: block l's weights in e4m3. One process keeps every block's copy for the whole step
  // (made at its first forward, used by every micro-batch and the backward); sharded ranks quantise the
  // gathered weights at each gather and drop the copy after the block's backward, so that no rank holds
  // the whole model (the all-gather itself still moves bf16: docs/fsdp.md).
  const Fp8Block* fp8_for(size_t l, const BlockView& w) {
    if (!fp8_) return nullptr;
    if (!fp8_fresh_[l]) {
      fp8_blocks_[l] = quantize_block(w, fp8_scaling_);
      fp8_fresh_[l] = !fsdp_->collectives();
    }
    return &fp8_blocks_[l];
  }

  // One micro-batch, forward then backward, written out (trainer/model/block.h): no autograd graph over the
  // model, weights read from the units' flat buffers, gradients accumulated by the GEMMs into the units'
  // gradient buffers. Blocks chosen for recomputation keep only their input.
  at::Tensor forward_backward(const MicroBatch& mb, double loss_scale) override {
    at::NoGradGuard no_grad;
    const auto dev = s_.device;
    const LlamaConfig& c = s_.model_config;
    const int64_t B = mb.input_ids.size(0), T = mb.input_ids.size(1), N = B * T;
    const size_t L = model_.blocks().size();
    const bool sharded = fsdp_->collectives();
    if (!recompute_.chosen()) choose_recomputation(N);
    at::Tensor ids = mb.input_ids.to(dev).reshape({N});
    at::Tensor targets = mb.targets.to(dev).reshape({N});
    const AttnPlans plans = make_attn_plans(c, rope_, mb.positions, mb.segments, s_.compute_dtype, dev);
    if (fsdp_->config().grad_sync == GradSync::kOncePerStep)
      fsdp_->set_grad_sync(++micro_batches_ >= s_.config.gradient_accumulation_steps);

    RootView root = root_view(fsdp_->acquire(0));
    if (sharded) fsdp_->prefetch(1);
    at::Tensor h = embed_fwd(c, root.embed, ids);
    std::vector<at::Tensor> inputs(L);
    saved_.resize(L);
    for (size_t l = 0; l < L; ++l) {
      // Wait for this unit's gather before the next one is issued: the wait then names this gather's
      // completion, and the next gather still starts before this block's kernels are queued.
      BlockView w = block_view(c, fsdp_->acquire(1 + l));
      if (sharded && l + 1 < L) fsdp_->prefetch(2 + l);
      inputs[l] = h;
      h = block_fwd(c, w, h, plans.layer(c, l), recompute_[l] ? nullptr : &saved_[l], fp8_for(l, w));
      fsdp_->release_gathered(1 + l);
    }
    RootView groot = root_view(fsdp_->grad_buffer(0));
    if (sharded) fsdp_->prefetch(L);
    HeadResult head =
        head_loss_fwd_bwd(c, h, root.norm, root.head, targets, loss_scale, groot.norm, groot.head, chunk_rows_);
    h = at::Tensor();
    at::Tensor dh = head.dh;
    at::Tensor dh_amax;  // FP8: each block's input gradient's amax, handed to the block below (block.h)
    for (size_t l = L; l-- > 0;) {
      BlockView w = block_view(c, fsdp_->acquire(1 + l));
      if (sharded && l > 0) fsdp_->prefetch(l);
      const Fp8Block* q = fp8_for(l, w);
      const AttnPlan& plan = plans.layer(c, l);
      if (recompute_[l]) block_fwd(c, w, inputs[l], plan, &saved_[l], q);
      dh = block_bwd(c, w, block_view(c, fsdp_->grad_buffer(1 + l)), inputs[l], saved_[l], dh, plan, q, &dh_amax,
                     fsdp_->backward_writes(1 + l, first_micro_batch_));
      if (sharded && fp8_) fp8_blocks_[l] = Fp8Block();
      inputs[l] = at::Tensor();
      fsdp_->reduce_grad(1 + l);
      fsdp_->release_gathered(1 + l);
    }
    first_micro_batch_ = false;
    embed_bwd(c, groot.embed, ids, dh);
    fsdp_->reduce_grad(0);
    fsdp_->release_gathered(0);
    return head.loss_sum;
  }

  // Evaluation: the blocks' forward without saving activations, and the head's loss without its parameter
  // gradients; no backward, no gradient buffer touched, the step's counters unchanged.
  at::Tensor forward_loss(const MicroBatch& mb) override {
    at::NoGradGuard no_grad;
    const auto dev = s_.device;
    const LlamaConfig& c = s_.model_config;
    const int64_t N = mb.input_ids.size(0) * mb.input_ids.size(1);
    const size_t L = model_.blocks().size();
    const bool sharded = fsdp_->collectives();
    at::Tensor ids = mb.input_ids.to(dev).reshape({N});
    at::Tensor targets = mb.targets.to(dev).reshape({N});
    const AttnPlans plans = make_attn_plans(c, rope_, mb.positions, mb.segments, s_.compute_dtype, dev);
    RootView root = root_view(fsdp_->acquire(0));
    if (sharded) fsdp_->prefetch(1);
    at::Tensor h = embed_fwd(c, root.embed, ids);
    for (size_t l = 0; l < L; ++l) {
      BlockView w = block_view(c, fsdp_->acquire(1 + l));
      if (sharded && l + 1 < L) fsdp_->prefetch(2 + l);
      h = block_fwd(c, w, h, plans.layer(c, l), nullptr, fp8_for(l, w));
      if (sharded && fp8_) fp8_blocks_[l] = Fp8Block();
      fsdp_->release_gathered(1 + l);
    }
    HeadResult head = head_loss_fwd_bwd(c, h, root.norm, root.head, targets, 1.0, at::Tensor(), at::Tensor(), chunk_rows_);
    fsdp_->release_gathered(0);
    return head.loss_sum;
  }

  at::Tensor clip_grad_norm(double max_norm) override {
    return max_norm > 0 ? fsdp_->clip_grad_norm(max_norm) : fsdp_->grad_norm();
  }

  void optimizer_step(double lr) override {
    const auto& c = s_.config;
    fsdp_->step({lr, c.betas[0], c.betas[1], c.eps, c.weight_decay});
    fp8_fresh_.assign(fp8_fresh_.size(), false);  // new weights: quantise them again
  }

  void zero_grad() override {
    fsdp_->zero_grad();
    micro_batches_ = 0;
    first_micro_batch_ = true;
  }

  at::Tensor all_reduce_sum(const at::Tensor& t) override {
    at::Tensor out = t.clone();
    dist_->all_reduce_sum(out);
    return out;
  }

  // Unit by unit: every rank joins each all-gather; rank 0 streams the tensors to the writer in
  // checkpoint order (the root unit's norm and lm_head wait on the CPU until the blocks are written).
  void save(const SaveOptions& o) override {
    std::unique_ptr<CheckpointSaver> saver;
    if (dist_->rank() == 0) saver = std::make_unique<CheckpointSaver>(s_.model_config, o);
    std::map<std::string, at::Tensor> waiting;
    size_t next = 0;
    for (size_t u = 0; u < fsdp_->units().size(); ++u) {
      NamedTensors full = fsdp_->gather_full_params(u, o.dtype, dist_->rank() == 0);
      if (!saver) continue;
      for (auto& [name, t] : full) waiting[name] = t;
      const auto& order = saver->order();
      while (next < order.size() && waiting.count(order[next])) {
        saver->write(order[next], waiting[order[next]]);
        waiting.erase(order[next]);
        ++next;
      }
    }
    if (saver) saver->commit();
    dist_->barrier();
  }

  void save_sharded(const std::string& dir, const LoopState& loop) override {
    save_sharded_checkpoint(*fsdp_, dir, loop);
  }

  bool load_sharded(const std::string& dir, LoopState& loop) override {
    fp8_fresh_.assign(fp8_fresh_.size(), false);
    return load_sharded_checkpoint(*fsdp_, dir, loop);
  }

  // The root unit's tensors as views into its flat buffer (head = embeddings when tied).
  struct RootView {
    at::Tensor embed, norm, head;
  };
  RootView root_view(const at::Tensor& flat) const {
    RootView v;
    for (const auto& p : fsdp_->units()[0]->params) {
      at::Tensor t = flat.narrow(0, p.offset, p.numel).view(p.shape);
      if (p.name == "model.embed_tokens.weight") v.embed = t;
      else if (p.name == "model.norm.weight") v.norm = t;
      else if (p.name == "lm_head.weight") v.head = t;
    }
    if (!v.head.defined()) v.head = v.embed;
    return v;
  }

  // Which blocks recompute their activations in backward: the setting, or with auto as many blocks keep
  // theirs as the free device memory holds after the weights, gradients and optimizer state (measured,
  // with room left for the head's logits chunk and one block's transient buffers).
  void choose_recomputation(int64_t tokens) {
    const LlamaConfig& c = s_.model_config;
    const size_t L = model_.blocks().size();
    const int64_t elem = static_cast<int64_t>(c10::elementSize(s_.compute_dtype));
    int64_t per_block = block_saved_bytes(c, tokens, elem);
    int64_t cache = 0;
    if (fp8_) {  // the linears' inputs kept as one-byte operands; every block's FP8 weights (two bytes a parameter)
      per_block -= tokens * (2 * c.hidden_size + c.num_attention_heads * c.head_dim + c.intermediate_size) * (elem - 1);
      if (!fsdp_->collectives()) cache = 2 * block_numel(c) * static_cast<int64_t>(L);
    }
    const int64_t transient = 2 * std::min(chunk_rows_, tokens) * c.vocab_size * 4 + 6 * tokens * c.intermediate_size * elem +
                              tokens * c.hidden_size * elem * 8 + (int64_t{3} << 30) + cache;
    recompute_.choose(s_.config.activation_checkpointing, s_.device, L, per_block, transient);
  }

  std::string after_first_step() const override { return recompute_.summary(s_.config.activation_checkpointing); }

  std::string describe() const override {
    int64_t shard = 0;
    for (auto& u : fsdp_->units()) shard += u->shard_numel;
    return "fsdp engine: " + std::to_string(dist_->world_size()) + " ranks over " + dist_->backend_name() + ", " +
           std::to_string(fsdp_->units().size()) + " units (root + " + std::to_string(model_.blocks().size()) +
           " blocks), " + std::to_string(shard) + " parameters per rank, master " + c10::toString(s_.master_dtype) +
           ", compute " + c10::toString(s_.compute_dtype) + ", gradients reduce-scattered " +
           (fsdp_->config().grad_sync == GradSync::kOncePerStep ? "once per step" : "every micro-batch") +
           " in fp32, attention " + attention_kernel_name() + (ops::have_cuda_kernels() ? ", fused CUDA kernels" : "") +
           (dist_->world_size() == 1 && fsdp_->collectives() ? ", gathers and reduce-scatters run at world 1" : "") +
           ", block GEMMs " + (fp8_ ? "fp8 e4m3 " + s_.config.fp8_scaling + (s_.device.is_cuda() ? "" : " (emulated)")
                                    : std::string(c10::toString(s_.compute_dtype))) +
           ", activation recomputation " + s_.config.activation_checkpointing +
           " (decided at the first micro-batch; see the recompute line)";
  }

 private:
  EngineSetup s_;
  std::unique_ptr<Dist> dist_;
  LlamaModel model_;
  Rope rope_;
  std::unique_ptr<Fsdp> fsdp_;
  int64_t micro_batches_ = 0;
  std::vector<BlockSaved> saved_;
  RecomputePlan recompute_;
  int64_t chunk_rows_ = 1;
  bool fp8_ = s_.config.precision == "fp8";
  bool first_micro_batch_ = true;  // no gradient accumulated since the last zero_grad (the linears' are written)
  fp8::Scaling fp8_scaling_ = s_.config.fp8_scaling == "rowwise" ? fp8::Scaling::kRowwise : fp8::Scaling::kTensorwise;
  std::vector<Fp8Block> fp8_blocks_;
  std::vector<bool> fp8_fresh_;
};

}  // namespace

std::unique_ptr<Engine> make_fsdp_engine(const EngineSetup& s) { return std::make_unique<FsdpEngine>(s); }

}  // namespace air::train

