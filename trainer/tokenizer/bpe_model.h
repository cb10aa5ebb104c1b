// The BPE model: turns one pre-tokenized piece into token ids by applying merges in rank order, exactly as
// Hugging Face's `tokenizers` BPE does, with a per-thread cache of recent pieces. Byte-level models (GPT-2, Llama 3,
// Qwen) start from the piece's bytes; the others (SentencePiece-style: Gemma, Llama 2, Mistral) from its
// UTF-8 characters, where a character missing from the vocabulary becomes its bytes' `<0xXX>` tokens
// (byte_fallback) or the unknown token.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace air::train {

struct BpeMerge {
  int32_t left;
  int32_t right;
  int32_t result;
};

struct BpeModelOptions {
  bool byte_level = true;          // symbols are bytes (vocab keys are raw bytes); else UTF-8 characters
  bool byte_fallback = false;      // character models: an unknown character becomes <0xXX> byte tokens
  bool ignore_merges = false;      // a piece that is itself a vocabulary entry becomes that one token
  std::optional<int32_t> unk_id;   // for bytes missing from the vocabulary; dropped when unset
  bool fuse_unk = false;           // consecutive unknown bytes become one unk token
  size_t cache_capacity = 100000;  // 0: no cache of recent pieces (8192 per thread; none longer than 256 bytes)
};

class BpeModel {
 public:
  // vocab maps raw bytes (not byte-level text) to ids; merges are in rank order (index = rank).
  BpeModel(std::unordered_map<std::string, int32_t> vocab, const std::vector<BpeMerge>& merges,
           BpeModelOptions options);
  BpeModel(BpeModel&&) noexcept;

  // Appends the ids of one piece to `out`. When `lengths` is given, it also receives how many bytes of the
  // piece each token covers (the cache keeps both, so offsets cost no extra merging). Thread-safe.
  void encode(std::string_view piece, std::vector<int32_t>& out, std::vector<uint32_t>* lengths = nullptr) const;

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Symbol;
  void initial_symbols(std::string_view piece, std::vector<Symbol>& syms) const;
  void encode_word(std::string_view piece, std::vector<int32_t>& out, std::vector<uint32_t>* lengths) const;
  void whole_or_merge(std::string_view piece, std::vector<int32_t>& out, std::vector<uint32_t>* lengths) const;
  void merge(std::string_view piece, std::vector<int32_t>& out, std::vector<uint32_t>* lengths) const;

  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab_;
  // (left, right) -> (rank, result): an open-addressing table (linear probing, at most half full), since the
  // lookups of the merge loop are most of a first pass and a node-based map costs a cache miss per step.
  struct MergeSlot {
    uint64_t key = kEmptyKey;
    int32_t rank = 0;
    int32_t result = 0;
  };
  static constexpr uint64_t kEmptyKey = ~0ull;  // ids are below 2^24, so no pair has this key
  std::vector<MergeSlot> merges_;
  uint64_t merge_mask_ = 0;
  const MergeSlot* find_merge(uint64_t key) const;
  // Character models merge a whole text at once (no pre-tokenizer splits Gemma's or Llama 2's text), which is
  // slow and never cached. A merge result is a vocabulary token, so a "▁" can only ever join the character
  // before it if some token holds that character followed by "▁" (Gemma: only ">" in ">▁</"). The text is
  // cut before every other "▁" that follows a non-"▁" character and each word merged (and cached) alone:
  // the same ids, word by word. Off with ignore_merges (a whole-piece lookup) and for byte-level models.
  bool split_words_ = false;
  std::unordered_set<std::string, StringHash, std::equal_to<>> joins_metaspace_;  // characters some token joins to a following "▁"
  int32_t byte_ids_[256];      // byte-level: the token of each byte; character models: of each ASCII character
  int32_t fallback_ids_[256];  // character models: the <0xXX> token of each byte, -1 when missing
  BpeModelOptions options_;
  uint64_t id_;  // names this model in the per-thread cache of recent pieces (bpe_model.cc)
};

}  // namespace air::train
