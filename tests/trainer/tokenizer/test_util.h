// Shared helpers for the tokenizer tests: a small valid tokenizer.json to mutate, and a tokenizer trained
// on tests/trainer/data/corpus.txt.
#pragma once
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "trainer/tokenizer/byte_level.h"
#include "trainer/tokenizer/bpe_train.h"
#include "trainer/tokenizer/tokenizer.h"

namespace air::train::testing {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string corpus_path() { return std::string(AIR_TEST_DATA_DIR) + "/trainer/data/corpus.txt"; }

// The tokenizer.json text our trainer makes from the test corpus.
inline std::string trained_json(int32_t vocab_size = 1024) {
  BpeTrainOptions options;
  options.vocab_size = vocab_size;
  BpeTrainer trainer(options);
  trainer.add_text(read_text(corpus_path()));
  return trainer.to_tokenizer_json(trainer.train());
}

inline const Tokenizer& trained_tokenizer() {
  static const Tokenizer t = Tokenizer::from_json_text(trained_json(), "trained.json");
  return t;
}

// A minimal Llama 3 shaped tokenizer.json: the 256 bytes, then "ab", "bc", "abc", "cc" with the given
// merges, and one special token <|bos|> after them.
inline nlohmann::json small_tokenizer(nlohmann::json merges = {"b c", "a b", "a bc"}) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_char(static_cast<unsigned char>(b))] = b;
  vocab["ab"] = 256;
  vocab["bc"] = 257;
  vocab["abc"] = 258;
  vocab["cc"] = 259;
  nlohmann::json j = nlohmann::json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 260, "content": "<|bos|>", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\s+|[^\\s\\p{L}]+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<|bos|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [],
      "special_tokens": {"<|bos|>": {"id": "<|bos|>", "ids": [260], "tokens": ["<|bos|>"]}}},
    "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false}
  })");
  j["model"]["vocab"] = vocab;
  j["model"]["merges"] = merges;
  return j;
}

// A minimal SentencePiece-style (Llama 2 shaped) tokenizer.json: <unk> <s> </s>, the 256 <0xXX> byte tokens
// (ids 3-258), then "▁", "a", "b", "c", "▁a", "ab", "▁ab"; merges "▁ a", "a b", "▁a b"; the legacy
// normalizer (Prepend "▁", spaces to "▁"), no pre-tokenizer, BOS from the template, and Llama 2's decoders.
inline nlohmann::json small_sp_tokenizer() {
  nlohmann::json vocab = nlohmann::json::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  vocab["</s>"] = 2;
  static const char* const kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) vocab[std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">"] = 3 + b;
  int32_t id = 259;
  for (const char* t : {"\u2581", "a", "b", "c", "\u2581a", "ab", "\u2581ab"}) vocab[t] = id++;
  nlohmann::json j = nlohmann::json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [
      {"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
      {"id": 1, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
      {"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "pre_tokenizer": null,
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
              "merges": [["\u2581", "a"], ["a", "b"], ["\u2581a", "b"]]}
  })");
  j["model"]["vocab"] = vocab;
  return j;
}

inline std::string load_error(const nlohmann::json& j) {
  try {
    Tokenizer::from_json_text(j.dump(), "t.json");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace air::train::testing
