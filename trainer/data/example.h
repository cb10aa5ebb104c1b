// One tokenized training example and what building one needs from a tokenizer; the Alpaca prompt of the
// reference script. Shared by the data loading (trainer/data/dataset.h) and the batches (trainer/batches.h).
// No libtorch (library air_data).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainer/data/alpaca.h"

namespace air::train {

class Tokenizer;

// What the data needs from a tokenizer.
struct TextEncoder {
  std::function<std::vector<int32_t>(const std::string&)> encode;  // no special tokens added
  std::optional<int32_t> bos;  // prepended when set (Llama 3's tokenizer adds <|begin_of_text|>)
  int32_t eos = 0;             // appended after the response (the reference appends eos_token)
  int32_t pad = 0;             // fills padded rows; never a target
  // The tokenizer itself, for chat data (token offsets, special tokens' text); may be null in tests that
  // only train on Alpaca records.
  std::shared_ptr<const Tokenizer> tokenizer;
};

// One tokenized example. A token is a training target when trained(t): by `mask` when it is set (chat data:
// one flag per token), else from prompt_len on (Alpaca: [bos] prompt response eos).
struct Example {
  std::vector<int32_t> ids;
  int64_t prompt_len = 0;
  std::vector<uint8_t> mask;

  bool trained(size_t t) const { return mask.empty() ? static_cast<int64_t>(t) >= prompt_len : mask[t] != 0; }
  // Targets among the first `len` tokens (token 0 is never one: nothing predicts it).
  int64_t targets_within(int64_t len) const {
    int64_t n = 0;
    for (int64_t t = 1; t < len && t < static_cast<int64_t>(ids.size()); ++t) n += trained(static_cast<size_t>(t));
    return n;
  }
};

// "### Instruction:\n{instruction}\n\n" ["### Input:\n{input}\n\n"] "### Response:\n" (the reference's).
std::string format_prompt(const AlpacaRecord& r);

Example make_example(const AlpacaRecord& r, const TextEncoder& enc);

}  // namespace air::train
