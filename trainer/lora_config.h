// The `lora:` block of air-train's settings: low-rank adapters on the block linears, with the base frozen
// (docs/trainer.md, LoRA). Names and defaults are PEFT's (LoraConfig), so a recipe carries over.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace air::train {

struct LoraConfig {
  bool enabled = false;  // a `lora:` block is present (and not `lora: null` / `lora: false`)
  int64_t r = 16;
  double alpha = 32;     // scaling = alpha / r (PEFT's lora_alpha; rsLoRA is not supported)
  double dropout = 0.0;  // PEFT's lora_dropout: on the adapters' inputs, one mask per module, training only
  // PEFT module names in canonical order (q_proj k_proj v_proj o_proj gate_proj up_proj down_proj);
  // `all-linear` expands to all seven.
  std::vector<std::string> target_modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                             "down_proj"};
  std::string init = "default";  // PEFT's init_lora_weights=True: A kaiming-uniform(a=sqrt(5)), B zeros
  bool merge = false;            // also write the merged full weights as the HF checkpoint in output_dir
  // The frozen base across ranks: "false" (every rank holds it whole: no gathers), "true" (each rank holds
  // 1 / world of every block's weights and gathers a block as it runs, as full fine-tuning does: a base
  // larger than one device trains), "auto" (true when world > 1 and the base would take more than half of
  // the device's memory).
  std::string shard_base = "auto";

  double scaling() const { return alpha / static_cast<double>(r); }
  bool targets(const std::string& module) const;
};

// The seven block linears by PEFT name, in the order air keeps them.
const std::vector<std::string>& lora_module_names();

// A problem in the `lora:` block located at one YAML node (thrown by set_lora_yaml).
struct LoraYamlError {
  int line = 0, column = 0;  // 0-based, as YAML::Mark
  size_t width = 1;
  std::string message, hint;
};

// Reads `lora:` (a mapping, or null/false for off). Throws LoraYamlError (a located problem) for the
// first bad sub-key or value; the message names the field path (`lora.r`).
void set_lora_yaml(LoraConfig& c, const YAML::Node& n);
// `--set lora.<key>=<value>` (value already parsed as YAML); `--set lora=false` turns it off.
void set_lora_key(LoraConfig& c, const std::string& key, const YAML::Node& value);
// Checks values and combinations; appends one message per problem ("lora.r must be ...").
void validate_lora(const LoraConfig& c, std::vector<std::string>& errors);
// One line for --print-config: "off" or "{r: 16, alpha: 32, ...}".
std::string render_lora(const LoraConfig& c);

}  // namespace air::train
