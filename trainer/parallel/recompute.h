// Which blocks recompute their activations in backward: one rule for the FSDP and the LoRA engines.
#pragma once
#include <ATen/core/TensorBody.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/metrics.h"

namespace air::train {

struct RecomputePlan {
  std::vector<bool> blocks;  // per block: true = recompute in backward (empty until chosen)
  size_t recomputed = 0;
  int64_t per_block = 0;     // bytes a block keeps for backward
  int64_t free_bytes = -1;   // free device memory when chosen (-1: not measured)

  bool chosen() const { return !blocks.empty(); }
  bool operator[](size_t block) const { return blocks[block]; }

  // setting (activation_checkpointing): "true" recomputes every block, "false" none; "auto" on a GPU lets as
  // many blocks keep their activations as the free device memory holds after `transient` bytes (the head's
  // logits chunk, one block's buffers, a margin), the first blocks recomputing.
  void choose(const std::string& setting, const at::Device& device, size_t num_blocks, int64_t per_block_bytes,
              int64_t transient) {
    per_block = per_block_bytes;
    size_t keep = num_blocks;
    if (setting == "true") keep = 0;
    if (setting == "auto" && device.is_cuda()) {
      free_bytes = free_device_memory(device);
      const int64_t budget = free_bytes - transient;
      keep = budget <= 0 ? 0
                         : std::min<size_t>(num_blocks, static_cast<size_t>(budget / std::max<int64_t>(1, per_block)));
    }
    blocks.assign(num_blocks, false);
    for (size_t l = 0; l < num_blocks - keep; ++l) blocks[l] = true;
    recomputed = num_blocks - keep;
  }

  // The line air-train logs after the first step.
  std::string summary(const std::string& setting) const {
    std::string out = "recompute: " + std::to_string(recomputed) + " of " + std::to_string(blocks.size()) +
                      " blocks (activation_checkpointing: " + setting + "; " + std::to_string(per_block >> 20) +
                      " MiB of activations per block";
    if (free_bytes >= 0) out += ", " + std::to_string(free_bytes >> 20) + " MiB free before the first step";
    return out + ")";
  }
};

}  // namespace air::train
