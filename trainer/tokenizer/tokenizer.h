// A Hugging Face tokenizer.json loader and BPE encoder/decoder, no libtorch: byte-level BPE (Llama 3, Qwen,
// gpt-oss) and SentencePiece-style BPE with byte fallback (Gemma 3, Llama 2, Mistral, Phi-3), with the
// normalizers, pre-tokenizers and decoders they declare (docs/tokenizer.md lists them). Gives exactly the ids
// of Hugging Face's `tokenizers`; anything else is refused when the file is read.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace air::train {

class Tokenizer {
 public:
  // Loads tokenizer.json; throws std::runtime_error naming the file and the problem.
  static Tokenizer from_file(const std::string& path);
  static Tokenizer from_json_text(const std::string& json_text, const std::string& name = "tokenizer.json");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Encodes text; special/added tokens written in the text are recognised (HF behaviour).
  // add_bos applies the post-processor's template (Llama 3, Gemma 3: BOS before the text; with
  // tokenizer_config.json's add_bos_token / add_eos_token, BOS and/or EOS), as HF's add_special_tokens=True
  // does; no template, nothing added.
  // Thread-safe. Bytes that are not valid UTF-8 are encoded byte by byte, never rejected.
  std::vector<int32_t> encode(std::string_view text, bool add_bos = false) const;

  // encode() with each token's place in `text`: offsets[i] is the byte range [first, second) of `text` that
  // token i came from (Hugging Face's offset mapping, in bytes of the original text, not characters).
  // Tokens the post-processor adds (BOS) have an empty range at their position; a token built from bytes of
  // two places (a normalizer's or pre-tokenizer's inserted prefix) spans from the first original byte; a
  // token of inserted text alone (SentencePiece's prepended "▁") has an empty range where it was inserted.
  // Normalized text maps back to the text it came from (Gemma's "▁" to the space, NFC's "é" to "e" + accent).
  // The chat-data code uses it to turn trained character spans of a rendered template into token labels:
  // a token is trained when its range lies inside a trained span. ids are always equal to encode()'s.
  struct Encoding {
    std::vector<int32_t> ids;
    std::vector<std::pair<uint32_t, uint32_t>> offsets;
  };
  Encoding encode_with_offsets(std::string_view text, bool add_bos = false) const;
  // Invalid UTF-8 in the result becomes U+FFFD (as HF); an unknown id throws std::runtime_error.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;

  int32_t vocab_size() const;  // including added tokens (max id + 1)
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> pad_id() const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token's text as written in tokenizer.json (byte-level characters); nullopt for unknown ids.
  std::optional<std::string> id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;  // a special added token (skipped by decode(..., true))

  struct Impl;  // opaque; defined in trainer/tokenizer/impl.h for the library's own files

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace air::train
