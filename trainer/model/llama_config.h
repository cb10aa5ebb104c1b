// The description of a decoder model, read from a Hugging Face config.json (transformers 4.x and 5.x keys):
// Llama, and the families that differ from it by options of the same block (Mistral, Qwen2/2.5, Qwen3,
// Gemma 3 text, Phi-3/4; docs/trainer.md "Model families"). One struct for all of them: each difference is a
// field (q/k/v bias, per-head q/k norm, (1 + w) norms, four norms a block, GeGLU, embedding scale, partial
// rotary, sliding windows per layer with their own RoPE base, fused checkpoint names...), never a copy of
// the block per family. Mixture-of-experts and unknown model types are refused when read. ModelConfig is the
// name; LlamaConfig, its older one, is kept as an alias.
// No libtorch here: the FSDP planner, the checkpoint writer and the FLOP counter all need only the shape.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace air::train {

struct RopeScaling {
  std::string type;  // "" (plain RoPE), "llama3", "linear" (frequencies / factor) or "longrope" (Phi-3)
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  // longrope: per-frequency divisors (rotary_dim / 2 each): short_factor while every position is below
  // original_max_position_embeddings, long_factor beyond; cos and sin scaled by attention_factor.
  std::vector<double> short_factor, long_factor;
  double attention_factor = 1.0;
};

struct ModelConfig {
  std::string model_type = "llama";  // as config.json says: llama, mistral, qwen2, qwen3, gemma3_text, phi3
  std::string architecture = "LlamaForCausalLM";  // what the saved config.json's "architectures" names
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

  // The family's options (Llama's values by default).
  bool qkv_bias = false;        // Qwen2: bias on q, k and v (not o)
  bool qk_norm = false;         // Qwen3, Gemma 3: RMSNorm over head_dim on every q and k head, before RoPE
  bool norm_plus_one = false;   // Gemma: every RMSNorm multiplies by (1 + w) (weights stored as w)
  bool sandwich_norm = false;   // Gemma 3: norms after attention and after the MLP too (four a block)
  std::string hidden_act = "silu";  // the gate's activation: silu (SwiGLU) or gelu_pytorch_tanh (GeGLU)
  double embed_scale = 1.0;     // Gemma: embeddings times sqrt(hidden_size) (rounded to the compute dtype)
  bool fused_checkpoint = false;  // Phi-3: checkpoint tensors self_attn.qkv_proj and mlp.gate_up_proj
  int64_t rotary_dim = 0;       // dimensions of a head that RoPE rotates (head_dim * partial_rotary_factor)
  double query_scale = 0;       // attention's score scale; 0: 1 / sqrt(head_dim)
  int64_t sliding_window = 0;   // tokens a sliding layer's query sees (itself included); 0: none
  std::vector<bool> layer_sliding;  // per layer: a sliding-window layer (empty: none)
  double rope_local_theta = 0;  // Gemma 3: the sliding layers' RoPE base (plain RoPE); 0: as the others
  double final_logit_softcapping = 0;  // logits = cap * tanh(logits / cap); 0: none

  bool is_sliding(int64_t layer) const {
    return sliding_window > 0 && layer < static_cast<int64_t>(layer_sliding.size()) && layer_sliding[layer];
  }
  bool any_sliding() const;
  // Whether the block is Llama's exactly (what the autograd reference in trainer/model/model.h computes).
  bool plain_llama() const;

  // Parameters, each counted once (tied embeddings once).
  int64_t num_parameters() const;
  // Model FLOPs per token for training at sequence length T: 6N + 12*L*H*T (the MFU convention).
  double train_flops_per_token(int64_t seq_len) const;
};

using LlamaConfig = ModelConfig;

// Parses and checks a config.json; `name` (usually the path) names the file in errors. A model_type that is
// not supported (mixture-of-experts, unknown) is an error naming it.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& name);
ModelConfig load_model_config(const std::string& path);
// The config.json to write next to saved weights (the original keys, dtype updated).
nlohmann::json model_config_to_json(const ModelConfig& c, const std::string& saved_dtype);
// The older names.
inline ModelConfig parse_llama_config(const nlohmann::json& j, const std::string& name) {
  return parse_model_config(j, name);
}
inline ModelConfig load_llama_config(const std::string& path) { return load_model_config(path); }
inline nlohmann::json llama_config_to_json(const ModelConfig& c, const std::string& saved_dtype) {
  return model_config_to_json(c, saved_dtype);
}

}  // namespace air::train
