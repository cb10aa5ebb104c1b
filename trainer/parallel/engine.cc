// What every engine starts from: the model's parameters, pretrained or randomly initialised.
#include "trainer/parallel/engine.h"

#include "core/base/error.h"
#include "trainer/checkpoint/safetensors.h"

namespace air::train {

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
