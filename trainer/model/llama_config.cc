// Reads a Hugging Face Llama config.json into LlamaConfig and checks the parts the trainer relies on.
#include "trainer/model/llama_config.h"

#include <fstream>
#include <sstream>

#include "core/base/error.h"

namespace air::train {
namespace {

int64_t get_int(const nlohmann::json& j, const char* key, const std::string& name, bool required,
                int64_t fallback = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw Error(name + ": missing required key '" + key + "'");
    return fallback;
  }
  if (!it->is_number_integer() || it->get<int64_t>() <= 0)
    throw Error(name + ": '" + key + "' must be a positive integer, got " + it->dump());
  return it->get<int64_t>();
}

double get_num(const nlohmann::json& j, const char* key, const std::string& name, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw Error(name + ": '" + key + "' must be a number, got " + it->dump());
  return it->get<double>();
}

std::vector<int64_t> get_ids(const nlohmann::json& j, const char* key) {
  std::vector<int64_t> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (it->is_number_integer()) out.push_back(it->get<int64_t>());
  if (it->is_array())
    for (const auto& v : *it)
      if (v.is_number_integer()) out.push_back(v.get<int64_t>());
  return out;
}

// transformers 4.x: rope_theta + rope_scaling {rope_type|type, ...};
// transformers 5.x: rope_parameters {rope_type, rope_theta, ...}.
void parse_rope(const nlohmann::json& j, const std::string& name, LlamaConfig& c) {
  c.rope_theta = get_num(j, "rope_theta", name, 10000.0);
  const nlohmann::json* rs = nullptr;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) rs = &j["rope_parameters"];
  else if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) rs = &j["rope_scaling"];
  if (!rs) return;
  c.rope_theta = get_num(*rs, "rope_theta", name, c.rope_theta);
  std::string type;
  if (rs->contains("rope_type") && (*rs)["rope_type"].is_string()) type = (*rs)["rope_type"];
  else if (rs->contains("type") && (*rs)["type"].is_string()) type = (*rs)["type"];
  if (type.empty() || type == "default") return;
  if (type != "llama3")
    throw Error(name + ": rope type '" + type + "' is not supported",
                "air-train supports plain RoPE and rope_type 'llama3'");
  c.rope_scaling.type = type;
  c.rope_scaling.factor = get_num(*rs, "factor", name, 8.0);
  c.rope_scaling.low_freq_factor = get_num(*rs, "low_freq_factor", name, 1.0);
  c.rope_scaling.high_freq_factor = get_num(*rs, "high_freq_factor", name, 4.0);
  c.rope_scaling.original_max_position_embeddings =
      get_int(*rs, "original_max_position_embeddings", name, false, 8192);
  if (c.rope_scaling.high_freq_factor <= c.rope_scaling.low_freq_factor)
    throw Error(name + ": llama3 rope needs high_freq_factor > low_freq_factor");
}

}  // namespace

int64_t LlamaConfig::num_parameters() const {
  const int64_t h = hidden_size, kv = num_key_value_heads * head_dim, q = num_attention_heads * head_dim;
  const int64_t block = 2 * h + h * q + 2 * h * kv + q * h + 3 * h * intermediate_size;
  return vocab_size * h * (tie_word_embeddings ? 1 : 2) + h + num_hidden_layers * block;
}

double LlamaConfig::train_flops_per_token(int64_t seq_len) const {
  return 6.0 * static_cast<double>(num_parameters()) +
         12.0 * static_cast<double>(num_hidden_layers) * static_cast<double>(hidden_size) *
             static_cast<double>(seq_len);
}

LlamaConfig parse_llama_config(const nlohmann::json& j, const std::string& name) {
  if (!j.is_object()) throw Error(name + ": expected a JSON object");
  if (j.contains("model_type") && j["model_type"].is_string() && j["model_type"] != "llama")
    throw Error(name + ": model_type '" + j["model_type"].get<std::string>() + "' is not supported",
                "air-train trains Llama-family models (model_type 'llama')");
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (j.contains(key) && j[key].is_boolean() && j[key].get<bool>())
      throw Error(name + ": '" + key + "': true is not supported (Llama 3 has no biases)");
  if (j.contains("hidden_act") && j["hidden_act"] != "silu")
    throw Error(name + ": hidden_act " + j["hidden_act"].dump() + " is not supported (only silu)");
  LlamaConfig c;
  c.raw = j;
  c.vocab_size = get_int(j, "vocab_size", name, true);
  c.hidden_size = get_int(j, "hidden_size", name, true);
  c.intermediate_size = get_int(j, "intermediate_size", name, true);
  c.num_hidden_layers = get_int(j, "num_hidden_layers", name, true);
  c.num_attention_heads = get_int(j, "num_attention_heads", name, true);
  c.num_key_value_heads = get_int(j, "num_key_value_heads", name, false, c.num_attention_heads);
  c.head_dim = get_int(j, "head_dim", name, false, c.hidden_size / c.num_attention_heads);
  c.max_position_embeddings = get_int(j, "max_position_embeddings", name, false, 2048);
  c.rms_norm_eps = get_num(j, "rms_norm_eps", name, 1e-6);
  c.initializer_range = get_num(j, "initializer_range", name, 0.02);
  c.tie_word_embeddings = j.value("tie_word_embeddings", false);
  c.bos_token_ids = get_ids(j, "bos_token_id");
  c.eos_token_ids = get_ids(j, "eos_token_id");
  if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) c.torch_dtype = j["torch_dtype"];
  else if (j.contains("dtype") && j["dtype"].is_string()) c.torch_dtype = j["dtype"];
  parse_rope(j, name, c);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(name + ": num_attention_heads (" + std::to_string(c.num_attention_heads) +
                ") is not a multiple of num_key_value_heads (" + std::to_string(c.num_key_value_heads) + ")");
  if (c.head_dim % 2 != 0) throw Error(name + ": head_dim must be even for RoPE");
  return c;
}

LlamaConfig load_llama_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read model config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw Error(path + ": not valid JSON");
  return parse_llama_config(j, path);
}

nlohmann::json llama_config_to_json(const LlamaConfig& c, const std::string& saved_dtype) {
  nlohmann::json j = c.raw;
  if (!j.contains("architectures")) j["architectures"] = {"LlamaForCausalLM"};
  if (!j.contains("model_type")) j["model_type"] = "llama";
  // transformers 5 writes "dtype", 4.x "torch_dtype"; both read either.
  j["torch_dtype"] = saved_dtype;
  if (j.contains("dtype")) j["dtype"] = saved_dtype;
  j["use_cache"] = true;
  return j;
}

}  // namespace air::train
