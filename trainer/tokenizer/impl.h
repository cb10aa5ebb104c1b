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
#include "trainer/tokenizer/normalize.h"
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
// (Hugging Face's Aho-Corasick with LeftmostLongest), through a byte trie (Gemma has 6 415 added tokens,
// 6 322 of them starting with '<').
class AddedTokenMatcher {
 public:
  void add(const AddedToken* token);
  bool empty() const { return count_ == 0; }
  // The next match at or after `from`; nullptr when none.
  const AddedToken* find(std::string_view text, size_t from, size_t& at) const;

 private:
  static uint64_t edge(uint32_t node, unsigned char byte) { return (static_cast<uint64_t>(node) << 8) | byte; }
  std::array<bool, 256> first_byte_{};
  int only_first_ = -1;  // the first byte of every token when they all share one, else -1
  std::unordered_map<uint64_t, uint32_t> edges_;         // (node, byte) -> child node; node 0 is the root
  std::vector<const AddedToken*> ends_{nullptr};          // node -> the token ending there
  size_t count_ = 0;
};

// One normalizer of tokenizer.json (a Sequence is flattened into a list of these).
struct NormalizerStep {
  enum class Kind { kUnicode, kReplace, kPrepend, kStrip } kind = Kind::kUnicode;
  UnicodeForm form = UnicodeForm::kNfc;  // kUnicode
  std::string pattern;                   // kReplace: the literal text replaced
  std::string content;                   // kReplace: its replacement; kPrepend: the prefix
  bool left = false, right = false;      // kStrip: which ends lose their whitespace
};

// How a Split keeps the delimiters it finds (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel, kMetaspace } kind = Kind::kSplit;
  std::shared_ptr<const SplitRegex> regex;  // Split's pattern, or ByteLevel's GPT-2 regex when use_regex
  SplitBehavior behavior = SplitBehavior::kIsolated;  // Split only
  bool invert = false;                                // Split only
  bool add_prefix_space = false;            // ByteLevel only
  // Metaspace: spaces become `replacement`, which is prepended per `prepend` and split on when `split`.
  std::string replacement;
  enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
  bool split = true;
};

// One decoder of tokenizer.json (a Sequence is flattened), applied to the list of token strings in order.
struct DecoderStep {
  enum class Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind = Kind::kByteLevel;
  std::string pattern, content;  // kReplace; kStrip: content is the character stripped; kMetaspace: pattern
  size_t start = 0, stop = 0;    // kStrip: how many to strip at each end
  bool prepend = true;           // kMetaspace: the first token's leading space goes (prepend_scheme != never)
};

struct Tokenizer::Impl {
  std::string name;
  std::vector<AddedToken> added;  // in file order
  AddedTokenMatcher raw_matcher;         // normalized: false, matched on the raw text first
  AddedTokenMatcher normalized_matcher;  // normalized: true, matched in the remaining pieces
  std::shared_ptr<const SplitRegex> word_char;  // `^\w`, for single_word tokens
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> steps;
  std::vector<DecoderStep> decoders;
  bool byte_level = true;  // the model works on bytes (a ByteLevel pre-tokenizer), not on characters
  std::unique_ptr<BpeModel> model;

  std::vector<std::string> tokens;        // id -> token text as in tokenizer.json ("" for holes)
  std::vector<std::string> token_bytes;   // id -> bytes the ByteLevel decoder produces for it
  std::vector<uint8_t> present;           // id -> 1 if the id exists
  std::vector<uint8_t> special;           // id -> 1 for special added tokens
  std::unordered_map<std::string, int32_t> by_token;  // vocabulary and added tokens

  std::vector<int32_t> template_prefix;  // TemplateProcessing "single" around $A
  std::vector<int32_t> template_suffix;
  std::optional<int32_t> bos, eos, pad;
};

// encode() and encode_with_offsets() in one (encode.cc): `offsets` is null for the plain form.
void encode_into(const Tokenizer::Impl& t, std::string_view text, bool add_special, std::vector<int32_t>& out,
                 std::vector<std::pair<uint32_t, uint32_t>>* offsets);

// decode() (decode.cc).
std::string decode_ids(const Tokenizer::Impl& t, const std::vector<int32_t>& ids, bool skip_special);

// Parses tokenizer.json text; errors name `name` and the JSON path.
std::unique_ptr<Tokenizer::Impl> load_tokenizer_json(const std::string& json_text, const std::string& name);

}  // namespace air::train
