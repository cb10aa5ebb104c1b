// Reads a Hugging Face Llama config.json into LlamaConfig and checks the parts the trainer relies on.
#include "trainer/model/llama_config.h"

#include <cmath>
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

double get_positive(const nlohmann::json& j, const char* key, const std::string& name, double fallback) {
  const double v = get_num(j, key, name, fallback);
  if (!(v > 0)) throw Error(name + ": '" + key + "' must be positive, got " + j[key].dump());
  return v;
}

std::vector<double> get_factors(const nlohmann::json& rs, const char* key, const std::string& name, size_t want) {
  std::vector<double> out;
  auto it = rs.find(key);
  if (it == rs.end() || !it->is_array())
    throw Error(name + ": longrope needs '" + key + "', a list of " + std::to_string(want) + " numbers");
  for (const auto& v : *it) {
    if (!v.is_number() || !(v.get<double>() > 0))
      throw Error(name + ": longrope '" + key + "' holds " + v.dump() + ", expected positive numbers");
    out.push_back(v.get<double>());
  }
  if (out.size() != want)
    throw Error(name + ": longrope '" + key + "' has " + std::to_string(out.size()) + " entries, expected " +
                std::to_string(want) + " (rotary dimensions / 2)");
  return out;
}

std::string rope_type_of(const nlohmann::json& rs) {
  if (rs.contains("rope_type") && rs["rope_type"].is_string()) return rs["rope_type"];
  if (rs.contains("type") && rs["type"].is_string()) return rs["type"];
  return "";
}

// One RoPE description (a rope_scaling / rope_parameters object) into c.rope_scaling and c.rope_theta.
void parse_rope_object(const nlohmann::json& j, const nlohmann::json& rs, const std::string& name, LlamaConfig& c) {
  c.rope_theta = get_num(rs, "rope_theta", name, c.rope_theta);
  std::string type = rope_type_of(rs);
  if (type == "su") type = "longrope";  // Phi-3's first name for it
  if (type.empty() || type == "default") return;
  auto& r = c.rope_scaling;
  r.type = type;
  if (type == "llama3") {
    r.factor = get_num(rs, "factor", name, 8.0);
    r.low_freq_factor = get_num(rs, "low_freq_factor", name, 1.0);
    r.high_freq_factor = get_num(rs, "high_freq_factor", name, 4.0);
    r.original_max_position_embeddings = get_int(rs, "original_max_position_embeddings", name, false, 8192);
    if (r.high_freq_factor <= r.low_freq_factor)
      throw Error(name + ": llama3 rope needs high_freq_factor > low_freq_factor");
  } else if (type == "linear") {
    r.factor = get_positive(rs, "factor", name, 1.0);
  } else if (type == "longrope") {
    // The rotary dimension is known once partial_rotary_factor is read: parse_rope fills the factors then.
  } else {
    throw Error(name + ": rope type '" + type + "' is not supported",
                "air-train supports plain RoPE and rope types 'llama3', 'linear' and 'longrope'");
  }
  (void)j;
}

// transformers 4.x: rope_theta + rope_scaling {rope_type|type, ...};
// transformers 5.x: rope_parameters {rope_type, rope_theta, ...}, or (Gemma 3) one such object per layer type
// ({"full_attention": {...}, "sliding_attention": {...}}).
void parse_rope(const nlohmann::json& j, const std::string& name, LlamaConfig& c) {
  c.rope_theta = get_num(j, "rope_theta", name, c.rope_theta);
  const nlohmann::json* rs = nullptr;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) rs = &j["rope_parameters"];
  else if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) rs = &j["rope_scaling"];
  const nlohmann::json* local = nullptr;
  if (rs && rs->contains("full_attention") && (*rs)["full_attention"].is_object()) {
    if (rs->contains("sliding_attention") && (*rs)["sliding_attention"].is_object()) local = &(*rs)["sliding_attention"];
    rs = &(*rs)["full_attention"];
  }
  if (rs) parse_rope_object(j, *rs, name, c);
  // partial_rotary_factor: a top-level key (Phi-3) or inside rope_parameters (transformers 5).
  double partial = get_num(j, "partial_rotary_factor", name, 1.0);
  if (rs) partial = get_num(*rs, "partial_rotary_factor", name, partial);
  if (!(partial > 0 && partial <= 1)) throw Error(name + ": partial_rotary_factor must be in (0, 1]");
  c.rotary_dim = static_cast<int64_t>(static_cast<double>(c.head_dim) * partial);
  if (c.rotary_dim < 2 || c.rotary_dim % 2 != 0)
    throw Error(name + ": head_dim * partial_rotary_factor = " + std::to_string(c.rotary_dim) +
                " rotary dimensions; RoPE needs an even number >= 2");
  if (c.rope_scaling.type == "longrope") {
    auto& r = c.rope_scaling;
    const size_t half = static_cast<size_t>(c.rotary_dim / 2);
    r.short_factor = get_factors(*rs, "short_factor", name, half);
    r.long_factor = get_factors(*rs, "long_factor", name, half);
    // As transformers: a top-level original_max_position_embeddings (Phi-3) sets the factor to
    // max_position_embeddings / it; otherwise rope_scaling's own original length and factor.
    const bool top = j.contains("original_max_position_embeddings") && j["original_max_position_embeddings"].is_number();
    r.original_max_position_embeddings =
        top ? get_int(j, "original_max_position_embeddings", name, true)
            : get_int(*rs, "original_max_position_embeddings", name, false, c.max_position_embeddings);
    const double ratio = static_cast<double>(c.max_position_embeddings) /
                         static_cast<double>(r.original_max_position_embeddings);
    const double factor = top ? ratio : get_num(*rs, "factor", name, ratio);
    r.factor = factor;
    r.attention_factor = get_num(*rs, "attention_factor", name,
                                 factor <= 1.0 ? 1.0
                                               : std::sqrt(1.0 + std::log(factor) /
                                                                     std::log(static_cast<double>(
                                                                         r.original_max_position_embeddings))));
  }
  if (local) {
    const std::string t = rope_type_of(*local);
    if (!t.empty() && t != "default")
      throw Error(name + ": rope type '" + t + "' for the sliding layers is not supported (plain RoPE only)");
    c.rope_local_theta = get_num(*local, "rope_theta", name, 10000.0);
  }
}

bool flag(const nlohmann::json& j, const char* key, bool fallback = false) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

bool is_moe_type(const std::string& t) {
  static const char* kMoe[] = {"qwen3_moe", "qwen2_moe", "mixtral", "gpt_oss", "deepseek_v2", "deepseek_v3",
                               "dbrx", "olmoe", "jamba", "granitemoe", "phimoe", "qwen3_next", "llama4",
                               "llama4_text", "minimax", "glm4_moe", "ernie4_5_moe", "hunyuan_v1_moe"};
  for (const char* m : kMoe)
    if (t == m) return true;
  return false;
}

const char* default_architecture(const std::string& t) {
  if (t == "mistral") return "MistralForCausalLM";
  if (t == "qwen2") return "Qwen2ForCausalLM";
  if (t == "qwen3") return "Qwen3ForCausalLM";
  if (t == "gemma3_text") return "Gemma3ForCausalLM";
  if (t == "phi3") return "Phi3ForCausalLM";
  return "LlamaForCausalLM";
}

}  // namespace

bool ModelConfig::any_sliding() const {
  for (int64_t l = 0; l < num_hidden_layers; ++l)
    if (is_sliding(l)) return true;
  return false;
}

bool ModelConfig::plain_llama() const {
  return !qkv_bias && !qk_norm && !norm_plus_one && !sandwich_norm && hidden_act == "silu" && embed_scale == 1.0 &&
         rotary_dim == head_dim && query_scale == 0 && !any_sliding() && final_logit_softcapping == 0 &&
         (rope_scaling.type.empty() || rope_scaling.type == "llama3");
}

int64_t ModelConfig::num_parameters() const {
  const int64_t h = hidden_size, kv = num_key_value_heads * head_dim, q = num_attention_heads * head_dim;
  int64_t block = 2 * h + h * q + 2 * h * kv + q * h + 3 * h * intermediate_size;
  if (qkv_bias) block += q + 2 * kv;
  if (qk_norm) block += 2 * head_dim;
  if (sandwich_norm) block += 2 * h;
  return vocab_size * h * (tie_word_embeddings ? 1 : 2) + h + num_hidden_layers * block;
}

double ModelConfig::train_flops_per_token(int64_t seq_len) const {
  return 6.0 * static_cast<double>(num_parameters()) +
         12.0 * static_cast<double>(num_hidden_layers) * static_cast<double>(hidden_size) *
             static_cast<double>(seq_len);
}

ModelConfig parse_model_config(const nlohmann::json& j, const std::string& name) {
  if (!j.is_object()) throw Error(name + ": expected a JSON object");
  const std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>()
                                                                                   : "llama";
  const std::string kSupported = "air-train trains model_type llama, mistral, qwen2, qwen3, gemma3_text and phi3";
  if (is_moe_type(type) || j.contains("num_experts") || j.contains("num_local_experts"))
    throw Error(name + ": model_type '" + type + "' is a mixture-of-experts model, which air-train does not support yet",
                kSupported + " (dense models)");
  if (type == "gemma3")
    throw Error(name + ": model_type 'gemma3' is the multimodal Gemma3ForConditionalGeneration, not supported yet",
                "use a text-only checkpoint (model_type gemma3_text, Gemma3ForCausalLM: gemma-3-1b or a text-only "
                "conversion of the 4B+ models)");
  if (type != "llama" && type != "mistral" && type != "qwen2" && type != "qwen3" && type != "gemma3_text" &&
      type != "phi3")
    throw Error(name + ": model_type '" + type + "' is not supported yet", kSupported);
  const bool gemma = type == "gemma3_text", qwen = type == "qwen2" || type == "qwen3";
  ModelConfig c;
  c.raw = j;
  c.model_type = type;
  c.architecture = default_architecture(type);
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string()) {
    c.architecture = j["architectures"][0];
    if (c.architecture.find("ForCausalLM") == std::string::npos)
      throw Error(name + ": architecture '" + c.architecture + "' is not supported",
                  "air-train trains the *ForCausalLM architecture of each supported model_type");
  }
  // Biases: Qwen2 has them on q, k and v always; every other supported block has none.
  if (flag(j, "mlp_bias")) throw Error(name + ": 'mlp_bias': true is not supported (no supported family has MLP biases)");
  if (flag(j, "attention_bias"))
    throw Error(name + ": 'attention_bias': true is not supported",
                "it puts a bias on the output projection too, which no supported checkpoint has");
  c.qkv_bias = type == "qwen2";
  // Dropout: transformers applies it in training; air-train has none, so a config that asks for it is refused.
  for (const char* key : {"attention_dropout", "resid_pdrop", "embd_pdrop", "hidden_dropout", "dropout"})
    if (get_num(j, key, name, 0.0) != 0.0)
      throw Error(name + ": '" + key + "' is " + j[key].dump() + "; air-train trains without dropout",
                  "set it to 0.0 in config.json (fine-tuning recipes usually do)");
  std::string act = j.contains("hidden_activation") && j["hidden_activation"].is_string()
                        ? j["hidden_activation"].get<std::string>()
                        : j.value("hidden_act", gemma ? std::string("gelu_pytorch_tanh") : std::string("silu"));
  if (act == "swish") act = "silu";
  if (act != "silu" && act != "gelu_pytorch_tanh")
    throw Error(name + ": activation '" + act + "' is not supported", "air-train supports silu and gelu_pytorch_tanh");
  c.hidden_act = act;
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
  c.tie_word_embeddings = flag(j, "tie_word_embeddings", gemma);
  c.bos_token_ids = get_ids(j, "bos_token_id");
  c.eos_token_ids = get_ids(j, "eos_token_id");
  if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) c.torch_dtype = j["torch_dtype"];
  else if (j.contains("dtype") && j["dtype"].is_string()) c.torch_dtype = j["dtype"];
  if (c.head_dim % 2 != 0) throw Error(name + ": head_dim must be even for RoPE");
  if (gemma) {
    c.rope_theta = 1000000.0;
    c.rope_local_theta = get_num(j, "rope_local_base_freq", name, 10000.0);
  }
  parse_rope(j, name, c);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(name + ": num_attention_heads (" + std::to_string(c.num_attention_heads) +
                ") is not a multiple of num_key_value_heads (" + std::to_string(c.num_key_value_heads) + ")");
  if (j.contains("attn_logit_softcapping") && !j["attn_logit_softcapping"].is_null())
    throw Error(name + ": 'attn_logit_softcapping' is not supported (Gemma 2's attention soft-capping)");
  if (gemma) {
    c.qk_norm = c.norm_plus_one = c.sandwich_norm = true;
    c.embed_scale = std::sqrt(static_cast<double>(c.hidden_size));
    c.query_scale = 1.0 / std::sqrt(get_positive(j, "query_pre_attn_scalar", name, 256.0));
    c.final_logit_softcapping =
        j.contains("final_logit_softcapping") && !j["final_logit_softcapping"].is_null()
            ? get_positive(j, "final_logit_softcapping", name, 0.0)
            : 0.0;
  }
  if (type == "qwen3") c.qk_norm = true;
  if (type == "phi3") c.fused_checkpoint = true;
  // Sliding windows. Mistral and Phi-3: every layer when sliding_window is set. Gemma 3: the layers layer_types
  // marks "sliding_attention" (or all but every sliding_window_pattern-th). Qwen: use_sliding_window is refused.
  const int64_t L = c.num_hidden_layers;
  if (qwen && flag(j, "use_sliding_window"))
    throw Error(name + ": 'use_sliding_window': true is not supported for " + type + " yet",
                "the released Qwen2.5 and Qwen3 checkpoints set it false");
  if (type == "mistral" || type == "phi3") {
    c.sliding_window = get_int(j, "sliding_window", name, false, 0);
    if (c.sliding_window) c.layer_sliding.assign(L, true);
  } else if (gemma) {
    c.sliding_window = get_int(j, "sliding_window", name, false, 4096);
    if (j.contains("layer_types") && j["layer_types"].is_array()) {
      const auto& lt = j["layer_types"];
      if (static_cast<int64_t>(lt.size()) != L)
        throw Error(name + ": layer_types has " + std::to_string(lt.size()) + " entries for " + std::to_string(L) +
                    " layers");
      for (const auto& t : lt) {
        if (t != "sliding_attention" && t != "full_attention")
          throw Error(name + ": layer_types entry " + t.dump() + " is not supported",
                      "expected \"sliding_attention\" or \"full_attention\"");
        c.layer_sliding.push_back(t == "sliding_attention");
      }
    } else {
      const int64_t pattern = get_int(j, "sliding_window_pattern", name, false, 6);
      for (int64_t l = 0; l < L; ++l) c.layer_sliding.push_back((l + 1) % pattern != 0);
    }
  }
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read model config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw Error(path + ": not valid JSON");
  return parse_model_config(j, path);
}

nlohmann::json model_config_to_json(const ModelConfig& c, const std::string& saved_dtype) {
  nlohmann::json j = c.raw;
  if (!j.contains("architectures")) j["architectures"] = {c.architecture};
  if (!j.contains("model_type")) j["model_type"] = c.model_type;
  // transformers 5 writes "dtype", 4.x "torch_dtype"; both read either.
  j["torch_dtype"] = saved_dtype;
  if (j.contains("dtype")) j["dtype"] = saved_dtype;
  j["use_cache"] = true;
  return j;
}

}  // namespace air::train
