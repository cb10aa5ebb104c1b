// The pre-tokenizer regex: Hugging Face compiles Split patterns with Oniguruma; we compile them with PCRE2
// (UTF + UCP, JIT) after spelling `\s` out as Unicode White_Space, so both engines agree on every character.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace air::train {

// Regular expressions of the two byte-level families we support.
inline constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Rewrites an Oniguruma pattern for PCRE2: `\s` becomes the explicit White_Space set (PCRE2's own `\s`
// differs between versions, e.g. on U+180E). Throws std::invalid_argument for `\S` inside a class.
std::string oniguruma_to_pcre2(std::string_view pattern);

class SplitRegex {
 public:
  // literal: the pattern is a plain string (Split's {"String": ...}), not a regex.
  // Throws std::invalid_argument with PCRE2's message and offset when the pattern does not compile.
  SplitRegex(std::string_view pattern, bool literal);
  SplitRegex(SplitRegex&&) noexcept;
  SplitRegex& operator=(SplitRegex&&) noexcept;
  ~SplitRegex();

  // Splits `text` into matches and the gaps between them, in order (the "Isolated" behaviour);
  // empty pieces are dropped. Bytes that are not valid UTF-8 never match, so they end up in gaps.
  void split_isolated(std::string_view text, std::vector<std::string_view>& out) const;

  // Finds the next match at or after `start`; false when there is none.
  bool find(std::string_view text, size_t start, size_t& match_begin, size_t& match_end) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> c_;
};

}  // namespace air::train
