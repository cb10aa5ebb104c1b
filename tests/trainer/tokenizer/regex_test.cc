// The pre-tokenizer regex: Oniguruma's `\s` rewritten for PCRE2, and the Llama 3 split.
#include <catch2/catch.hpp>

#include "trainer/tokenizer/regex.h"

using air::train::SplitRegex;
using Pieces = std::vector<std::string>;

static Pieces split(const SplitRegex& re, std::string_view text) {
  std::vector<std::string_view> views;
  re.split_isolated(text, views);
  return Pieces(views.begin(), views.end());
}

TEST_CASE("regex: the escape s (backslash-s) becomes the Unicode White_Space set, inside and outside classes") {
  const std::string ws = R"(\x{9}-\x{D}\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
  CHECK(air::train::oniguruma_to_pcre2(R"(a\s+b)") == "a[" + ws + "]+b");
  CHECK(air::train::oniguruma_to_pcre2(R"([^\s\p{L}])") == "[^" + ws + R"(\p{L}])");
  CHECK(air::train::oniguruma_to_pcre2(R"(\s+(?!\S))") == "[" + ws + "]+(?![^" + ws + "])");
  CHECK(air::train::oniguruma_to_pcre2(R"([]\s])") == "[]" + ws + "]");
  CHECK(air::train::oniguruma_to_pcre2(R"(\\s)") == R"(\\s)");
  CHECK_THROWS_WITH(air::train::oniguruma_to_pcre2(R"([\S])"), "\\S inside a character class is not supported");
}

TEST_CASE("the Llama 3 pattern splits words, numbers, punctuation and spaces") {
  SplitRegex re(air::train::kLlama3Pattern, false);
  CHECK(split(re, "Hello world!") == Pieces{"Hello", " world", "!"});
  CHECK(split(re, "I'm here, they'RE not") == Pieces{"I", "'m", " here", ",", " they", "'RE", " not"});
  CHECK(split(re, "1234567") == Pieces{"123", "456", "7"});
  CHECK(split(re, "a  b") == Pieces{"a", " ", " b"});
  CHECK(split(re, "x  \n\n y") == Pieces{"x", "  \n\n", " y"});
  CHECK(split(re, "end   ") == Pieces{"end", "   "});
  CHECK(split(re, "(a)") == Pieces{"(a", ")"});
  // U+0085 is White_Space; U+180E and U+FEFF are not (PCRE2's own \s would disagree on U+180E).
  CHECK(split(re, "a \xC2\x85") == Pieces{"a", " \xC2\x85"});
  CHECK(split(re, "a\xE1\xA0\x8E\xE1\xA0\x8E" "b") == Pieces{"a", "\xE1\xA0\x8E\xE1\xA0\x8E", "b"});
  CHECK(split(re, "\xEF\xBB\xBFhi") == Pieces{"\xEF\xBB\xBFhi"});
}

TEST_CASE("invalid UTF-8 never matches and ends up in pieces of its own") {
  SplitRegex re(air::train::kLlama3Pattern, false);
  CHECK(split(re, "ab\xFF" "cd") == Pieces{"ab", "\xFF", "cd"});
  CHECK(split(re, "\xC3") == Pieces{"\xC3"});
}

TEST_CASE("literal Split patterns and empty matches") {
  SplitRegex lit("a.b", true);
  CHECK(split(lit, "xa.by") == Pieces{"x", "a.b", "y"});
  SplitRegex empty("x*", false);
  CHECK(split(empty, "abxxc") == Pieces{"ab", "xx", "c"});
  CHECK_THROWS_WITH(SplitRegex("(", false), "regex does not compile: missing closing parenthesis at offset 1");
}
