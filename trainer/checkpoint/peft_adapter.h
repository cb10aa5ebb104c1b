// LoRA adapters in PEFT's format, so `PeftModel.from_pretrained(base, dir)` loads them: adapter_config.json
// (LoraConfig's fields) and adapter_model.safetensors with PEFT's key names
// (`base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight`, fp32).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/lora_config.h"

namespace air::train {

inline constexpr const char* kPeftPrefix = "base_model.model.";

// adapter_config.json's text for these settings.
std::string peft_adapter_config_json(const LoraConfig& lc, const std::string& base_model);

// Writes both files into the existing folder `dir` (each fsync'd). `adapters`: HF names without PEFT's
// prefix (`model.layers.0.self_attn.q_proj.lora_A.weight`), any device and dtype (written as fp32).
void write_peft_adapter(const std::string& dir, const LoraConfig& lc, const std::string& base_model,
                        const std::vector<std::pair<std::string, at::Tensor>>& adapters);

// Atomically replaces output_dir (empty, absent, or an earlier checkpoint / adapter) with an adapter folder:
// written into a temporary folder beside it and renamed; output_dir/sharded is carried over.
void save_peft_adapter(const std::string& output_dir, const LoraConfig& lc, const std::string& base_model,
                       const std::vector<std::pair<std::string, at::Tensor>>& adapters);

}  // namespace air::train
