// Shared helpers for the trainer tests: a tiny Llama config and a byte-level stand-in encoder.
#pragma once
#include <string>
#include <vector>

#include "trainer/batches.h"
#include "trainer/model/llama_config.h"

namespace air::train::testing {

inline LlamaConfig tiny_config(bool tied = true, int64_t vocab = 300) {
  nlohmann::json j = {{"vocab_size", vocab},       {"hidden_size", 32},        {"intermediate_size", 64},
                      {"num_hidden_layers", 2},    {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                      {"rms_norm_eps", 1e-5},      {"rope_theta", 500000.0},   {"tie_word_embeddings", tied},
                      {"max_position_embeddings", 512},
                      {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                        {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}}}};
  return parse_llama_config(j, "tiny");
}

// Bytes shifted by 3: 0 = pad, 1 = bos, 2 = eos.
inline TextEncoder byte_encoder() {
  TextEncoder e;
  e.encode = [](const std::string& s) {
    std::vector<int32_t> ids;
    for (unsigned char ch : s) ids.push_back(static_cast<int32_t>(ch) + 3);
    return ids;
  };
  e.bos = 1;
  e.eos = 2;
  e.pad = 0;
  return e;
}

}  // namespace air::train::testing
