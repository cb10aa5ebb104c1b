// What every engine starts from: the model's parameters, pretrained or randomly initialised.
#include "trainer/parallel/engine.h"

#include "core/base/error.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/lora_block.h"

namespace air::train {

void check_model_features(const TrainConfig& t, const ModelConfig& c, const std::string& name) {
  // Every path works for every supported family: the hand-written block (CUDA kernels, FP8, recomputation,
  // FSDP units, sharded checkpoints and resume) carries the family's options; packing and sliding windows take the
  // masked attention kernels where the variable-length one has no window or score scale (block.h, AttnPlan).
  // LoRA's modules are the family's (Phi-3: the fused qkv_proj and gate_up_proj, as PEFT adapts them): a name the
  // family lacks is refused here.
  if (t.lora.enabled) lora_family_targets(t.lora, c, name);
}

LlamaModel build_model(const EngineSetup& s, at::Device device, at::ScalarType dtype) {
  LlamaModel m(s.model_config, device, dtype);
  if (s.config.init == "random") {
    m.init_random(static_cast<uint64_t>(s.config.seed));
  } else {
    if (!WeightSet::dir_has_weights(s.model_dir))
      throw Error("init: pretrained, but " + s.model_dir + " has no model.safetensors or model.safetensors.index.json",
                  "set init: random to train from a random initialisation");
    m.load_pretrained(s.model_dir);
  }
  return m;
}

}  // namespace air::train
