// The seam between the training loop and where parameters live. The product has one engine, FSDP at every
// world size (trainer/parallel/fsdp_engine.cc; at world size 1 it gathers and copies nothing): it gathers
// each block before block_forward, reduce-scatters gradients, clips from the shards, steps AdamW on its
// shard, and gathers unit by unit when saving. The tests drive the same loop with an autograd reference
// engine (tests/trainer/reference_engine.h) through this interface.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include <ATen/ATen.h>

#include "trainer/checkpoint/hf_checkpoint.h"
#include "trainer/checkpoint/sharded.h"
#include "trainer/config.h"
#include "trainer/batches.h"
#include "trainer/model/llama_config.h"
#include "trainer/model/model.h"

namespace air::train {

struct EngineSetup {
  TrainConfig config;
  LlamaConfig model_config;
  std::string model_dir;
  at::Device device = at::kCPU;
  at::ScalarType compute_dtype = at::kFloat;  // what blocks compute in
  at::ScalarType master_dtype = at::kFloat;   // parameters, gradients, optimizer state
  int64_t rank = 0, world_size = 1, local_rank = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Forward and backward of one micro-batch (CPU tensors; the engine moves them). The summed loss of its
  // targets is multiplied by loss_scale (1 / global target tokens of the step) before backward. Returns
  // the unscaled summed loss, detached, fp32 on the device (no host synchronisation).
  virtual at::Tensor forward_backward(const MicroBatch& mb, double loss_scale) = 0;
  // The forward alone (evaluation): the summed loss of the micro-batch's targets, as forward_backward
  // returns it, leaving gradients and the step's state alone. Every rank calls it. By default the full pass
  // with a zero loss scale (its gradients are zero); the FSDP engine runs no backward at all.
  virtual at::Tensor forward_loss(const MicroBatch& mb) { return forward_backward(mb, 0.0); }
  // Completes the step's gradients, clips them to max_norm (0: no clipping) and returns the global norm
  // before clipping (0-dim fp32 on the device).
  virtual at::Tensor clip_grad_norm(double max_norm) = 0;
  virtual void optimizer_step(double lr) = 0;
  virtual void zero_grad() = 0;
  // Sum over ranks (the loss for logging). Identity for one process.
  virtual at::Tensor all_reduce_sum(const at::Tensor& t) = 0;
  // Writes the consolidated checkpoint; every rank calls it, rank 0 writes.
  virtual void save(const SaveOptions& o) = 0;
  virtual std::string describe() const = 0;  // one line for the start-up banner
  // Decisions made during the first step (e.g. which blocks recompute), printed after it; may be empty.
  virtual std::string after_first_step() const { return ""; }
  // Writes this rank's shards and optimizer state plus `loop` under dir/step-N; every rank calls it.
  virtual void save_sharded(const std::string& dir, const LoopState& loop) = 0;
  // Restores the newest complete sharded checkpoint under dir; returns false when there is none.
  virtual bool load_sharded(const std::string& dir, LoopState& loop) = 0;
};

// Refuses, with the reason, a feature the model's family does not have in air-train (checked when the
// config is read, before anything is loaded). `name` names the config file in the error.
void check_model_features(const TrainConfig& t, const ModelConfig& c, const std::string& name);

// Builds the parameters on `device` in `dtype`: the checkpoint's weights (init: pretrained) or HF's random
// initialisation from the seed (init: random).
LlamaModel build_model(const EngineSetup& s, at::Device device, at::ScalarType dtype);

// The FSDP engine. Joins the process group from the environment (RANK, WORLD_SIZE, MASTER_ADDR, ...; NCCL
// when s.device is CUDA, else Gloo) and shards the model built by build_model(). Gradient accumulation
// reduce-scatters every micro-batch unless grad_sync: step (then once per step, keeping unsharded fp32
// gradients).
std::unique_ptr<Engine> make_fsdp_engine(const EngineSetup& s);
// LoRA (`lora:` set): the base frozen in the compute dtype on every rank, the adapters FSDP units
// (trainer/parallel/lora_engine.cc). Saves PEFT's adapter format (and the merged model with lora.merge).
std::unique_ptr<Engine> make_lora_engine(const EngineSetup& s);

}  // namespace air::train
