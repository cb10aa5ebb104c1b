// The sharded engine: the training loop's Engine (engine.h) over FSDP, for any world size. Root unit =
// embeddings, final norm and lm_head; one unit per decoder block. Also saves and restores sharded,
// resumable checkpoints (sharded_checkpoint.h).
#pragma once
// Until the trainer's model and checkpoint code is in the tree, this file compiles to nothing.
#if __has_include("trainer/parallel/engine.h")
#include <memory>
#include <string>

#include "trainer/parallel/engine.h"
#include "trainer/checkpoint/sharded.h"

namespace air::train {

class ShardedEngine : public Engine {
 public:
  // Writes this rank's shards and optimizer state plus `loop` under dir/step-N; every rank calls it.
  virtual void save_sharded(const std::string& dir, const LoopState& loop) = 0;
  // Restores the newest complete sharded checkpoint under dir; returns false when there is none.
  virtual bool load_sharded(const std::string& dir, LoopState& loop) = 0;
};

// Joins the process group from the environment (RANK, WORLD_SIZE, MASTER_ADDR, ...; NCCL when s.device is
// CUDA, else Gloo) and shards the model built by build_model(). Gradient accumulation reduce-scatters every
// micro-batch unless grad_sync: step (then once per step, keeping unsharded fp32 gradients).
std::unique_ptr<ShardedEngine> make_fsdp_engine(const EngineSetup& s);

}  // namespace air::train

#endif  // __has_include("trainer/parallel/engine.h")
