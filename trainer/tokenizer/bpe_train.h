// Byte-level BPE training: counts the words of a corpus (split by the Llama 3 regex), merges the most
// frequent adjacent pair until the vocabulary is full, and writes a Hugging Face tokenizer.json shaped
// like Llama 3's, so a tiny model can have a tokenizer of our own.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace air::train {

struct BpeTrainOptions {
  int32_t vocab_size = 1024;  // total, special tokens included
  int64_t min_frequency = 2;  // a pair seen fewer times is never merged
  // Added after the learned tokens, in this order. The first is BOS (the post-processor adds it).
  std::vector<std::string> special_tokens = {"<|begin_of_text|>", "<|end_of_text|>", "<|pad|>"};
};

struct BpeTrainResult {
  std::vector<std::string> tokens;                   // id -> raw bytes; ids 0..255 are the bytes themselves
  std::vector<std::pair<int32_t, int32_t>> merges;   // in rank order
  int64_t words = 0;                                 // pre-tokenized words seen
  int64_t distinct_words = 0;
};

class BpeTrainer {
 public:
  explicit BpeTrainer(BpeTrainOptions options);
  // Adds one text of the corpus; special tokens written in it are cut out first.
  void add_text(std::string_view text);
  // Learns the merges. Deterministic: most frequent pair first, ties to the smaller (left, right) ids.
  BpeTrainResult train() const;
  // The tokenizer.json text for a result (deterministic bytes, ends with a newline).
  std::string to_tokenizer_json(const BpeTrainResult& result) const;
  // A matching tokenizer_config.json for transformers (bos/eos/pad names).
  std::string to_tokenizer_config_json() const;

 private:
  BpeTrainOptions options_;
  std::vector<std::pair<std::string, int64_t>> word_list() const;
  struct Counts;
  std::shared_ptr<Counts> counts_;
};

}  // namespace air::train
