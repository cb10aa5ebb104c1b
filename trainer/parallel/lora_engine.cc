// The LoRA engine (`lora:` in the settings): the FSDP engine's loop with the base model frozen. The base
// weights live once, in the compute dtype, as one flat buffer per block (lora_base_view's layout): no fp32
// master, no gradient, no optimizer state for them. Whole on every rank, or with `lora.shard_base` sharded
// over the ranks (each keeps 1 / world of every block and all-gathers a block as it runs, the next one
// prefetched), so that a base larger than one device trains. The adapters are FSDP units (one
// per block: fp32 master shards, AdamW state, gradients reduce-scattered in fp32), so accumulation,
// clipping, sharded checkpoints and resume work as for full fine-tuning at any world size. The backward
// skips every weight-gradient GEMM of the base (trainer/model/lora_block.h).
#include <ATen/core/grad_mode.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "core/base/error.h"
#include "trainer/checkpoint/peft_adapter.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/metrics.h"
#include "trainer/model/block.h"
#include "trainer/model/lora_block.h"
#include "trainer/model/ops.h"
#include "trainer/parallel/dist.h"
#include "trainer/parallel/engine.h"
#include "trainer/parallel/fsdp.h"
#include "trainer/parallel/recompute.h"

namespace air::train {
namespace {

class LoraEngine : public Engine {
 public:
  explicit LoraEngine(const EngineSetup& s)
      : s_(s), lc_(s.config.lora), dist_(Dist::init(dist_env_from_environment(), engine_backend(s.device))),
        rope_(s.model_config, s.device) {
    at::NoGradGuard no_grad;
    const LlamaConfig& c = s.model_config;
    {
      // The base: built where it trains, then packed block by block into flat compute-dtype buffers (each
      // block's separate tensors are freed as it is packed, so the model is never held twice).
      LlamaModel m = build_model(s, s.device, s.compute_dtype);
      m.set_requires_grad(false);
      embed_ = m.root().embed_tokens;
      norm_ = m.root().norm;
      head_ = m.root().output_weight();
      // (The layout folds the adapters into the base GEMMs: lora_block.h, LoraBaseView.)
      // AIR_TRAIN_LORA_ALIGN=0: the folded matrices' rows packed without alignment (the comparison in
      // docs/performance.md).
      if (const char* a = std::getenv("AIR_TRAIN_LORA_ALIGN"); a && std::string(a) == "0") align_ = 1;
      const int world = dist_->world_size();
      base_numel_ = lora_base_numel(c, lc_, align_);
      shard_base_ = decide_shard_base(s, base_numel_ * c.num_hidden_layers * embed_.element_size());
      base_padded_ = shard_base_ ? (base_numel_ + world - 1) / world * world : base_numel_;
      for (auto& b : m.blocks()) {
        at::Tensor flat = at::empty({base_padded_}, embed_.options());
        lora_base_pack(c, lc_, b.list(), flat, align_);  // zeroes the padding too
        b = BlockWeights();
        if (shard_base_) {
          // This rank's slice; the whole block is freed at the end of the iteration.
          const int64_t n = base_padded_ / world;
          base_.push_back(flat.narrow(0, dist_->rank() * n, n).clone());
        } else {
          base_.push_back(flat);
          views_.push_back(lora_base_view(c, lc_, flat, align_));
        }
      }
      gathered_.resize(base_.size());
    }
    // AIR_TRAIN_LORA_FOLD=0: the adapters as separate GEMMs beside the base's (the comparison in
    // docs/performance.md); the same math.
    if (const char* f = std::getenv("AIR_TRAIN_LORA_FOLD"); f && std::string(f) == "0") fold_ = false;
    chunk_rows_ = head_chunk_rows(c);

    FsdpConfig fc;
    fc.param_dtype = s.compute_dtype;
    fc.master_dtype = s.master_dtype;
    fc.reduce_dtype = at::kFloat;
    fc.device = s.device;
    fc.sync_module_states = false;  // every rank initialises the adapters from the same seed
    if (s.config.grad_sync == "step") fc.grad_sync = GradSync::kOncePerStep;
    fc.fused_adamw = s.config.fused_adamw != "off";
    fc.world1_collectives = world1_collectives();
    fsdp_ = std::make_unique<Fsdp>(*dist_, fc);

    // The adapters, initialised on the CPU from the seed (the same on every rank and device), block by block.
    specs_ = lora_block_params(c, lc_);
    auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(s.config.seed));
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      std::vector<at::Tensor> ts;
      for (const auto& p : specs_) ts.push_back(at::empty(p.shape, at::TensorOptions().dtype(at::kFloat)));
      lora_init(lc_, specs_, ts, gen);
      NamedTensors named;
      for (size_t i = 0; i < ts.size(); ++i)
        named.emplace_back(LlamaModel::block_param_name(l, specs_[i].suffix), ts[i].to(s.device));
      fsdp_->add_unit("lora" + std::to_string(l), named);
    }
    if (const char* d = std::getenv("AIR_TRAIN_LORA_DUMP"); d && *d) dump_dir_ = d;
    if (!dump_dir_.empty()) {
      // Diagnostics for the PEFT comparison (scripts/gpu/check_lora.py): the initial adapter.
      std::vector<std::pair<std::string, at::Tensor>> init;
      for (size_t u = 0; u < fsdp_->units().size(); ++u)
        for (auto& nt : fsdp_->gather_full_params(u, at::kFloat, dist_->rank() == 0)) init.push_back(std::move(nt));
      if (dist_->rank() == 0) {
        std::filesystem::create_directories(dump_dir_ + "/init");
        write_peft_adapter(dump_dir_ + "/init", lc_, s.config.model_name, init);
      }
    }
  }

  at::Tensor forward_backward(const MicroBatch& mb, double loss_scale) override {
    at::NoGradGuard no_grad;
    const auto dev = s_.device;
    const LlamaConfig& c = s_.model_config;
    const int64_t B = mb.input_ids.size(0), T = mb.input_ids.size(1), N = B * T;
    const size_t L = base_.size();
    const bool sharded = fsdp_->collectives();
    if (!recompute_.chosen()) choose_recomputation(N);
    at::Tensor ids = mb.input_ids.to(dev).reshape({N});
    at::Tensor targets = mb.targets.to(dev).reshape({N});
    const AttnPlans plans = make_attn_plans(c, rope_, mb.positions, mb.segments, s_.compute_dtype, dev);
    if (fsdp_->config().grad_sync == GradSync::kOncePerStep)
      fsdp_->set_grad_sync(++micro_batches_ >= s_.config.gradient_accumulation_steps);

    if (sharded) fsdp_->prefetch(0);
    gather_base(0);
    ++micro_batch_count_;
    at::Tensor h = embed_fwd(c, embed_, ids);
    std::vector<at::Tensor> inputs(L);
    saved_.resize(L);
    for (size_t l = 0; l < L; ++l) {
      LoraBlock a = weights(l);
      a.dropout_seed = dropout_seed(l);
      if (sharded && l + 1 < L) fsdp_->prefetch(l + 1);
      if (l + 1 < L) gather_base(l + 1);
      inputs[l] = h;
      h = lora_block_fwd(c, base_view(l).w, a, h, plans.layer(c, l), recompute_[l] ? nullptr : &saved_[l]);
      fsdp_->release_gathered(l);
      release_base(l);
    }
    if (sharded) fsdp_->prefetch(L - 1);
    gather_base(L - 1);
    // dh with room for the top block's down adapter columns (the folded down backward writes them in place).
    const int64_t room = fold_ && lc_.targets("down_proj") ? lc_.r : 0;
    const at::Tensor dh_out = lora_grad_out(N, c.hidden_size, room, align_, h.options());
    HeadResult head = head_loss_fwd_bwd(c, h, norm_, head_, targets, loss_scale, {}, {}, chunk_rows_, dh_out);
    h = at::Tensor();
    at::Tensor dh = head.dh;
    for (size_t l = L; l-- > 0;) {
      LoraBlock a = weights(l);
      a.dropout_seed = dropout_seed(l);  // the forward's masks, drawn again
      lora_block_attach_grads(c, lc_, a, fsdp_->grad_buffer(l));
      if (sharded && l > 0) fsdp_->prefetch(l - 1);
      if (l > 0) gather_base(l - 1);
      const BlockView& w = base_view(l).w;
      const AttnPlan& plan = plans.layer(c, l);
      if (recompute_[l]) lora_block_fwd(c, w, a, inputs[l], plan, &saved_[l]);
      // The embeddings are frozen: the first block's input gradient is never needed.
      dh = lora_block_bwd(c, w, a, inputs[l], saved_[l], dh, plan, /*need_dh=*/l > 0,
                          /*dout_wide=*/lora_grad_room(a) > 0);
      inputs[l] = at::Tensor();
      fsdp_->reduce_grad(l);
      fsdp_->release_gathered(l);
      release_base(l);
    }
    return head.loss_sum;
  }

  // Evaluation: the blocks' forward without saving activations, the adapters without dropout (PEFT evaluates
  // in eval mode), the head's loss; no backward, no gradient buffer touched, and the step's counters and the
  // dropout masks' draw (micro_batch_count_) unchanged, so evaluating does not change what training does next.
  at::Tensor forward_loss(const MicroBatch& mb) override {
    at::NoGradGuard no_grad;
    const LlamaConfig& c = s_.model_config;
    const int64_t N = mb.input_ids.size(0) * mb.input_ids.size(1);
    const size_t L = base_.size();
    const bool sharded = fsdp_->collectives();
    at::Tensor ids = mb.input_ids.to(s_.device).reshape({N});
    at::Tensor targets = mb.targets.to(s_.device).reshape({N});
    const AttnPlans plans = make_attn_plans(c, rope_, mb.positions, mb.segments, s_.compute_dtype, s_.device);
    if (sharded) fsdp_->prefetch(0);
    gather_base(0);
    at::Tensor h = embed_fwd(c, embed_, ids);
    for (size_t l = 0; l < L; ++l) {
      LoraBlock a = weights(l);
      a.dropout = 0;
      if (sharded && l + 1 < L) fsdp_->prefetch(l + 1);
      if (l + 1 < L) gather_base(l + 1);
      h = lora_block_fwd(c, base_view(l).w, a, h, plans.layer(c, l), nullptr);
      fsdp_->release_gathered(l);
      release_base(l);
    }
    return head_loss_fwd_bwd(c, h, norm_, head_, targets, 1.0, {}, {}, chunk_rows_).loss_sum;
  }

  at::Tensor clip_grad_norm(double max_norm) override {
    if (!dump_dir_.empty() && !grads_dumped_) dump_grads();
    return max_norm > 0 ? fsdp_->clip_grad_norm(max_norm) : fsdp_->grad_norm();
  }

  void optimizer_step(double lr) override {
    const auto& c = s_.config;
    fsdp_->step({lr, c.betas[0], c.betas[1], c.eps, c.weight_decay});
    weights_.clear();  // new adapters
  }

  // Block l's adapters for this micro-batch: acquired (gathered when sharded) and viewed; one process keeps
  // the views and the scaled block-diagonal B from the step's first use until the optimizer step.
  const LoraBlock& weights(size_t l) {
    at::Tensor flat = fsdp_->acquire(l);
    const LoraBaseView* fold = fold_ ? &base_view(l) : nullptr;
    if (fsdp_->collectives()) {
      current_ = lora_block_weights(s_.model_config, lc_, flat, fold);
      return current_;
    }
    if (weights_.empty()) weights_.resize(base_.size());
    if (!weights_[l].r) weights_[l] = lora_block_weights(s_.model_config, lc_, flat, fold);
    return weights_[l];
  }

  // lora.shard_base: auto shards when there are ranks to shard over and the whole base would take more than
  // half of what the device has free now; true shards at any world size above 1.
  bool decide_shard_base(const EngineSetup& s, int64_t base_bytes) const {
    if (dist_->world_size() < 2 || lc_.shard_base == "false") return false;
    if (lc_.shard_base == "true") return true;
    const int64_t free = free_device_memory(s.device);
    return free > 0 && base_bytes > free / 2;
  }

  // Sharded base: block l's weights all-gathered into a new buffer (started here; base_view waits for it).
  void gather_base(size_t l) {
    if (!shard_base_ || gathered_[l].flat.defined()) return;
    Gathered& g = gathered_[l];
    g.flat = at::empty({base_padded_}, embed_.options());
    g.pending = dist_->all_gather(g.flat, base_[l]);
  }
  // Block l's base laid out for the folds: the whole copy every rank keeps, or the gathered one.
  const LoraBaseView& base_view(size_t l) {
    if (!shard_base_) return views_[l];
    gather_base(l);
    Gathered& g = gathered_[l];
    g.pending.wait();
    if (!g.view.w.qkv.defined()) g.view = lora_base_view(s_.model_config, lc_, g.flat, align_);
    return g.view;
  }
  void release_base(size_t l) {
    if (shard_base_) gathered_[l] = Gathered();
  }

  // The dropout masks' seed of block l in this micro-batch: from the run's seed, the micro-batch's number
  // in this process and the block (a recomputed forward and the backward draw the same masks).
  uint64_t dropout_seed(size_t l) const {
    uint64_t x = static_cast<uint64_t>(s_.config.seed) * 0x100000001B3ull ^ (micro_batch_count_ << 16) ^ l;
    // splitmix64's finaliser: nearby inputs give unrelated seeds.
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
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

  // The adapter in PEFT's format into output_dir; with lora.merge the merged model as the HF checkpoint
  // in output_dir and the adapter in output_dir/adapter. Every rank joins the adapters' gathers.
  void save(const SaveOptions& o) override {
    at::NoGradGuard no_grad;
    const bool writer = dist_->rank() == 0;
    std::vector<std::pair<std::string, at::Tensor>> adapters;
    for (size_t u = 0; u < fsdp_->units().size(); ++u)
      for (auto& nt : fsdp_->gather_full_params(u, at::kFloat, writer)) adapters.push_back(std::move(nt));
    if (!lc_.merge) {
      if (writer) save_peft_adapter(o.output_dir, lc_, s_.config.model_name, adapters);
    } else if (writer) {
      save_merged(o, adapters);
    } else if (shard_base_) {
      // The writer gathers the sharded base block by block, in order: join each gather.
      for (size_t l = 0; l < base_.size(); ++l) {
        base_view(l);
        release_base(l);
      }
    }
    dist_->barrier();
  }

  void save_sharded(const std::string& dir, const LoopState& loop) override {
    save_sharded_checkpoint(*fsdp_, dir, loop);
  }

  bool load_sharded(const std::string& dir, LoopState& loop) override {
    weights_.clear();
    return load_sharded_checkpoint(*fsdp_, dir, loop);
  }

  std::string after_first_step() const override { return recompute_.summary(s_.config.activation_checkpointing); }

  std::string describe() const override {
    int64_t shard = 0;
    for (auto& u : fsdp_->units()) shard += u->shard_numel;
    int64_t total = 0;
    for (auto& u : fsdp_->units()) total += u->numel;
    std::string mods;
    for (const auto& m : lc_.target_modules) mods += (mods.empty() ? "" : ",") + m;
    std::ostringstream alpha;
    alpha << lc_.alpha;
    return "lora engine: r " + std::to_string(lc_.r) + ", alpha " + alpha.str() + " on " +
           mods + ": " + std::to_string(total) + " trainable parameters (" + std::to_string(shard) +
           " per rank, master " + c10::toString(s_.master_dtype) + ") over " + std::to_string(dist_->world_size()) +
           " ranks (" + dist_->backend_name() + "), base frozen in " + c10::toString(s_.compute_dtype) +
           (shard_base_ ? ", sharded over the ranks (" +
                              std::to_string(base_padded_ / dist_->world_size() * static_cast<int64_t>(base_.size()) *
                                             embed_.element_size() >> 20) +
                              " MiB of it per rank, a block gathered as it runs)"
                        : " on every rank") +
           ", attention " + attention_kernel_name() + (ops::have_cuda_kernels() ? ", fused CUDA kernels" : "") +
           ", activation recomputation " + s_.config.activation_checkpointing;
  }

 private:
  // Merged weights (W + alpha/r B A for every adapted linear), written tensor by tensor in checkpoint order.
  void save_merged(const SaveOptions& o, const std::vector<std::pair<std::string, at::Tensor>>& adapters) {
    const LlamaConfig& c = s_.model_config;
    std::map<std::string, at::Tensor> ad(adapters.begin(), adapters.end());
    CheckpointSaver saver(c, o);
    const auto names = BlockWeights::names(c);  // "self_attn.q_proj.weight", ...
    const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim,
                  I = c.intermediate_size;
    // The block's weights in names() order, as views of the frozen base's layout (sharded: of the block
    // gathered now; the other ranks join the gathers in the same order, save()).
    size_t viewed = base_.size();
    auto weight = [&](size_t l, size_t i) -> at::Tensor {
      if (l != viewed) {
        if (viewed < base_.size()) release_base(viewed);
        viewed = l;
      }
      const BlockView& v = base_view(l).w;
      switch (i) {
        case 0: return v.ln1;
        case 1: return v.qkv.narrow(0, 0, q);
        case 2: return v.qkv.narrow(0, q, kv);
        case 3: return v.qkv.narrow(0, q + kv, kv);
        case 4: return v.o;
        case 5: return v.ln2;
        case 6: return v.gu.narrow(0, 0, I);
        case 7: return v.gu.narrow(0, I, I);
        case 8: return v.down;
        default: {  // the family's optional tensors, in names(c) order
          std::vector<at::Tensor> extra;
          if (v.qkv_b.defined())
            extra.insert(extra.end(), {v.qkv_b.narrow(0, 0, q), v.qkv_b.narrow(0, q, kv), v.qkv_b.narrow(0, q + kv, kv)});
          for (const at::Tensor* t : {&v.q_norm, &v.k_norm, &v.post_attn, &v.post_ffn})
            if (t->defined()) extra.push_back(*t);
          return extra.at(i - 9);
        }
      }
    };
    size_t next = 0;  // specs: embeddings, the blocks in names() order, norm, lm_head
    for (const auto& spec_name : saver.order()) {
      if (spec_name == "model.embed_tokens.weight") {
        saver.write(spec_name, embed_);
      } else if (spec_name == "model.norm.weight") {
        saver.write(spec_name, norm_);
      } else if (spec_name == "lm_head.weight") {
        saver.write(spec_name, head_);
      } else {
        const size_t l = next / names.size(), i = next % names.size();
        ++next;
        at::Tensor w = weight(l, i);
        const std::string& suffix = names[i];  // parent.module.weight
        // The adapted module is the checkpoint's: Phi-3's q/k/v are rows [row, row + rows) of qkv_proj (gate/up of
        // gate_up_proj), whose one adapter's B spans them all; each part merges with its rows of B.
        const CheckpointSlot slot = checkpoint_slot(c, suffix);
        const std::string& file = slot.suffix;
        const std::string module = file.substr(file.find('.') + 1, file.rfind('.') - file.find('.') - 1);
        if (file.size() > 7 && file.compare(file.size() - 7, 7, ".weight") == 0 && lc_.targets(module)) {
          const std::string stem = "model.layers." + std::to_string(l) + "." + file.substr(0, file.rfind('.'));
          at::Tensor b = ad.at(stem + ".lora_B.weight");
          if (slot.rows) b = b.narrow(0, slot.row, slot.rows);
          w = lora_merge(w, ad.at(stem + ".lora_A.weight"), b, lc_.scaling());
        }
        if (spec_name != LlamaModel::block_param_name(static_cast<int64_t>(l), suffix))
          throw Error("merged checkpoint: expected " + spec_name + ", have layer " + std::to_string(l) + " " + suffix);
        saver.write(spec_name, w.contiguous());
      }
    }
    if (viewed < base_.size()) release_base(viewed);
    // The adapter beside the merged weights, in a subfolder: a folder with adapter_config.json at its top
    // would make transformers load the adapter on top of the merged weights.
    const std::string adir = saver.temp_dir() + "/adapter";
    std::filesystem::create_directories(adir);
    write_peft_adapter(adir, lc_, s_.config.model_name, adapters);
    saver.commit();
  }

  // AIR_TRAIN_LORA_DUMP=DIR (one process): the first step's adapter gradients, before clipping, as
  // DIR/grads.safetensors with PEFT's names (the gradient of the step's loss, summed over its micro-batches).
  void dump_grads() {
    grads_dumped_ = true;
    if (dist_->world_size() != 1) {
      std::cerr << "AIR_TRAIN_LORA_DUMP: gradients are dumped at world size 1 only\n";
      return;
    }
    fsdp_->finish_backward();
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (auto& u : fsdp_->units())
      for (const auto& p : u->params)
        out.emplace_back(kPeftPrefix + p.name, u->grad.narrow(0, p.offset, p.numel).view(p.shape).to(at::kCPU, at::kFloat));
    std::filesystem::create_directories(dump_dir_);
    write_safetensors(dump_dir_ + "/grads.safetensors", out);
  }

  void choose_recomputation(int64_t tokens) {
    const LlamaConfig& c = s_.model_config;
    const int64_t elem = static_cast<int64_t>(c10::elementSize(s_.compute_dtype));
    const int64_t transient = 2 * std::min(chunk_rows_, tokens) * c.vocab_size * 4 +
                              6 * tokens * c.intermediate_size * elem + tokens * c.hidden_size * elem * 8 +
                              (int64_t{3} << 30);
    // A sharded base holds two gathered blocks while it runs (this one and the next).
    const int64_t gathered = shard_base_ ? 2 * base_padded_ * elem : 0;
    recompute_.choose(s_.config.activation_checkpointing, s_.device, base_.size(),
                      lora_block_saved_bytes(c, lc_, tokens, elem), transient + gathered);
  }


  EngineSetup s_;
  LoraConfig lc_;
  std::unique_ptr<Dist> dist_;
  Rope rope_;
  at::Tensor embed_, norm_, head_;
  std::vector<at::Tensor> base_;  // per block: the frozen weights, flat in lora_base_view's layout (sharded:
                                  // this rank's slice of base_padded_ elements)
  std::vector<LoraBaseView> views_;  // whole base: views of base_
  bool shard_base_ = false;
  int64_t base_numel_ = 0, base_padded_ = 0;
  struct Gathered {
    at::Tensor flat;
    Pending pending;
    LoraBaseView view;
  };
  std::vector<Gathered> gathered_;  // sharded base: the blocks gathered now (the running one and the next)
  bool fold_ = true;
  int64_t align_ = 64;
  uint64_t micro_batch_count_ = 0;
  std::vector<LoraParamSpec> specs_;
  std::unique_ptr<Fsdp> fsdp_;
  int64_t micro_batches_ = 0;
  std::vector<LoraSaved> saved_;
  RecomputePlan recompute_;
  int64_t chunk_rows_ = 1;
  std::string dump_dir_;
  bool grads_dumped_ = false;
  std::vector<LoraBlock> weights_;  // one process: per block, valid until the optimizer step
  LoraBlock current_;               // sharded: the block just gathered
};

}  // namespace

std::unique_ptr<Engine> make_lora_engine(const EngineSetup& s) { return std::make_unique<LoraEngine>(s); }

}  // namespace air::train
