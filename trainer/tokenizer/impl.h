// The loaded form of a tokenizer.json, shared by the loader (tokenizer_load.cc) and the encoder
// (tokenizer.cc). Internal to air_tokenizer.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainer/tokenizer/bpe_model.h"
#include "trainer/tokenizer/tokenizer.h"
#include "trainer/tokenizer/regex.h"

namespace air::train {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

// Finds added tokens in text: leftmost match first, the longest one where several start there
// (Hugging Face's Aho-Corasick with LeftmostLongest).
class AddedTokenMatcher {
 public:
  void add(const AddedToken* token);
  bool empty() const { return count_ == 0; }
  // The next match at or after `from`; nullptr when none.
  const AddedToken* find(std::string_view text, size_t from, size_t& at) const;

 private:
  std::array<std::vector<const AddedToken*>, 256> by_first_byte_;  // longest first
  size_t count_ = 0;
};

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel } kind = Kind::kSplit;
  std::shared_ptr<const SplitRegex> regex;  // Split's pattern, or ByteLevel's GPT-2 regex when use_regex
  bool add_prefix_space = false;            // ByteLevel only
};

struct Tokenizer::Impl {
  std::string name;
  std::vector<AddedToken> added;  // in file order
  AddedTokenMatcher raw_matcher;         // normalized: false, matched on the raw text first
  AddedTokenMatcher normalized_matcher;  // normalized: true, matched in the remaining pieces
  std::shared_ptr<const SplitRegex> word_char;  // `^\w`, for single_word tokens
  std::vector<PreTokenizerStep> steps;
  std::unique_ptr<BpeModel> model;

  std::vector<std::string> tokens;        // id -> token text as in tokenizer.json ("" for holes)
  std::vector<std::string> token_bytes;   // id -> bytes the decoder produces for it
  std::vector<uint8_t> present;           // id -> 1 if the id exists
  std::vector<uint8_t> special;           // id -> 1 for special added tokens
  std::unordered_map<std::string, int32_t> by_token;  // vocabulary and added tokens

  std::vector<int32_t> template_prefix;  // TemplateProcessing "single" around $A
  std::vector<int32_t> template_suffix;
  std::optional<int32_t> bos, eos, pad;
};

// Parses tokenizer.json text; errors name `name` and the JSON path.
std::unique_ptr<Tokenizer::Impl> load_tokenizer_json(const std::string& json_text, const std::string& name);

}  // namespace air::train
