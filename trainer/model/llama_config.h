// The shape of a Llama-family model, read from a Hugging Face config.json (transformers 4.x and 5.x keys).
// No libtorch here: the FSDP planner, the checkpoint writer and the FLOP counter all need only the shape.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace air::train {

struct RopeScaling {
  std::string type;  // "" (plain RoPE), "default" or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct LlamaConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  double initializer_range = 0.02;
  std::vector<int64_t> bos_token_ids;
  std::vector<int64_t> eos_token_ids;
  std::string torch_dtype;   // as the file says ("bfloat16"), may be empty
  nlohmann::json raw;        // the whole file, so a saved checkpoint keeps every key it came with

  // Parameters, each counted once (tied embeddings once).
  int64_t num_parameters() const;
  // Model FLOPs per token for training at sequence length T: 6N + 12*L*H*T (the MFU convention).
  double train_flops_per_token(int64_t seq_len) const;
};

// Parses and checks a config.json; `name` (usually the path) names the file in errors.
LlamaConfig parse_llama_config(const nlohmann::json& j, const std::string& name);
LlamaConfig load_llama_config(const std::string& path);
// The config.json to write next to saved weights (the original keys, dtype updated).
nlohmann::json llama_config_to_json(const LlamaConfig& c, const std::string& saved_dtype);

}  // namespace air::train
