// The FSDP engine: builds the Llama model on the CPU, shards it unit by unit onto the device (root unit
// first, then the blocks, so prefetching follows the forward order), and runs each micro-batch as
// embed -> blocks -> head + loss, every piece a checkpointed FSDP unit.
// Until the trainer's model and checkpoint code is in the tree, this file compiles to nothing.
#if __has_include("trainer/engine.h")
#include "trainer/fsdp_engine.h"

#include "core/error.h"
#include "trainer/dist.h"
#include "trainer/fsdp.h"

namespace air::train {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

class FsdpEngine : public ShardedEngine {
 public:
  explicit FsdpEngine(const EngineSetup& s)
      : s_(s),
        dist_(Dist::init(dist_env_from_environment(), s.device.is_cuda() ? DistBackend::kNccl : DistBackend::kGloo)),
        model_(build_model(s, at::kCPU, s.compute_dtype)),
        rope_(s.model_config, s.device) {
    FsdpConfig fc;
    fc.param_dtype = s.compute_dtype;
    fc.master_dtype = s.master_dtype;
    fc.reduce_dtype = at::kFloat;
    fc.device = s.device;
    // Every rank builds the same weights (same files or same seed): no broadcast needed.
    fc.sync_module_states = false;
    if (s.config.grad_sync == "step") fc.grad_sync = GradSync::kOncePerStep;
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
    for (size_t l = 0; l < blocks.size(); ++l) fsdp_->add_unit("layer" + std::to_string(l), blocks[l]);
  }

  at::Tensor forward_backward(const MicroBatch& mb, double loss_scale) override {
    const auto dev = s_.device;
    const LlamaConfig& c = s_.model_config;
    at::Tensor ids = mb.input_ids.to(dev), targets = mb.targets.to(dev);
    at::Tensor seg = mb.segments.defined() ? mb.segments.to(dev) : at::Tensor();
    AttentionContext ctx = rope_.context(mb.positions.to(dev), seg, s_.compute_dtype);
    if (fsdp_->config().grad_sync == GradSync::kOncePerStep)
      fsdp_->set_grad_sync(++micro_batches_ >= s_.config.gradient_accumulation_steps);
    at::Tensor h = fsdp_->run(0, ids, [this](const at::Tensor& x) { return embed(model_.root(), x); });
    for (size_t l = 0; l < model_.blocks().size(); ++l)
      h = fsdp_->run(1 + l, h, [this, l, &c, &ctx](const at::Tensor& x) {
        return block_forward(c, model_.blocks()[l], x, ctx);
      });
    at::Tensor loss = fsdp_->run(0, h, [this, &c, &targets](const at::Tensor& x) {
      return loss_sum(head(c, model_.root(), x), targets);
    });
    (loss * loss_scale).backward();
    return loss.detach();
  }

  at::Tensor clip_grad_norm(double max_norm) override {
    return max_norm > 0 ? fsdp_->clip_grad_norm(max_norm) : fsdp_->grad_norm();
  }

  void optimizer_step(double lr) override {
    const auto& c = s_.config;
    fsdp_->step({lr, c.betas[0], c.betas[1], c.eps, c.weight_decay});
  }

  void zero_grad() override {
    fsdp_->zero_grad();
    micro_batches_ = 0;
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
      const auto& specs = saver->specs();
      while (next < specs.size() && waiting.count(specs[next].name)) {
        saver->write(specs[next].name, waiting[specs[next].name]);
        waiting.erase(specs[next].name);
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
    return load_sharded_checkpoint(*fsdp_, dir, loop);
  }

  std::string describe() const override {
    int64_t shard = 0;
    for (auto& u : fsdp_->units()) shard += u->shard_numel;
    return "fsdp engine: " + std::to_string(dist_->world_size()) + " ranks over " + dist_->backend_name() + ", " +
           std::to_string(fsdp_->units().size()) + " units (root + " + std::to_string(model_.blocks().size()) +
           " blocks), " + std::to_string(shard) + " parameters per rank, master " + c10::toString(s_.master_dtype) +
           ", compute " + c10::toString(s_.compute_dtype) + ", gradients reduce-scattered " +
           (fsdp_->config().grad_sync == GradSync::kOncePerStep ? "once per step" : "every micro-batch") +
           " in fp32, attention " + attention_kernel_name() + ", activation recomputation per unit";
  }

 private:
  EngineSetup s_;
  std::unique_ptr<Dist> dist_;
  LlamaModel model_;
  Rope rope_;
  std::unique_ptr<Fsdp> fsdp_;
  int64_t micro_batches_ = 0;
};

}  // namespace

std::unique_ptr<ShardedEngine> make_fsdp_engine(const EngineSetup& s) { return std::make_unique<FsdpEngine>(s); }

}  // namespace air::train

#endif  // __has_include("trainer/engine.h")
