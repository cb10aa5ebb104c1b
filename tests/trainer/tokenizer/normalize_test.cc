// Unicode normalization (expected values from Python's unicodedata) and its byte alignment.
#include <catch2/catch.hpp>

#include "trainer/tokenizer/normalize.h"

using air::train::Align;
using air::train::UnicodeForm;

namespace {

std::string norm(std::string_view s, UnicodeForm f) {
  std::string out;
  air::train::unicode_normalize(s, f, out);
  return out;
}

}  // namespace

TEST_CASE("NFC, NFD, NFKC and NFKD give Python's unicodedata results") {
  CHECK(norm("e\u0301", UnicodeForm::kNfc) == "\u00e9");
  CHECK(norm("\u212b", UnicodeForm::kNfc) == "\u00c5");                        // a singleton (Angstrom sign)
  CHECK(norm("\u1100\u1161\u11a8", UnicodeForm::kNfc) == "\uac01");            // Hangul by arithmetic
  CHECK(norm("\uac01", UnicodeForm::kNfd) == "\u1100\u1161\u11a8");
  CHECK(norm("a\u0307\u0323", UnicodeForm::kNfc) == "\u1ea1\u0307");           // reordered, then composed
  CHECK(norm("\u1e69", UnicodeForm::kNfd) == "s\u0323\u0307");
  CHECK(norm("\ufb01\u2460", UnicodeForm::kNfkc) == "fi1");
  CHECK(norm("\ufb01\u2460", UnicodeForm::kNfc) == "\ufb01\u2460");            // compatibility is NFK only
  CHECK(norm("\u0958", UnicodeForm::kNfc) == "\u0915\u093c");                  // a composition exclusion
  CHECK(norm("\u0301e", UnicodeForm::kNfc) == "\u0301e");                      // a leading mark stays alone
  CHECK(norm("\u00bd", UnicodeForm::kNfkd) == "1\u20442");
  CHECK(norm("\u1e9b\u0323", UnicodeForm::kNfc) == "\u1e9b\u0323");
  CHECK(norm("plain ASCII, 日本語", UnicodeForm::kNfc) == "plain ASCII, 日本語");
  CHECK(norm("a\xff" "e\xcc\x81", UnicodeForm::kNfc) == "a\xff\u00e9");        // invalid bytes are copied
}

TEST_CASE("the quick check only passes text that is already normalized") {
  CHECK(air::train::is_normalized_quick("hello, 世界 🙂 café", UnicodeForm::kNfc));
  CHECK_FALSE(air::train::is_normalized_quick("cafe\u0301", UnicodeForm::kNfc));
  CHECK_FALSE(air::train::is_normalized_quick("\u212b", UnicodeForm::kNfc));
  CHECK_FALSE(air::train::is_normalized_quick("\u1100\u1161", UnicodeForm::kNfc));
  CHECK(air::train::is_normalized_quick("\ufb01", UnicodeForm::kNfc));
  CHECK_FALSE(air::train::is_normalized_quick("\ufb01", UnicodeForm::kNfkc));
  CHECK_FALSE(air::train::is_normalized_quick("\u00e9", UnicodeForm::kNfd));
  CHECK_FALSE(air::train::is_normalized_quick("\uac01", UnicodeForm::kNfd));
}

TEST_CASE("each normalized byte knows the original bytes it came from") {
  std::string out;
  std::vector<Align> align;
  // "xe" + U+0301 + "y": the composed é (2 bytes) comes from bytes 1..4 (e and the 2-byte accent).
  air::train::unicode_normalize("xe\u0301y", UnicodeForm::kNfc, out, nullptr, 10, &align);
  CHECK(out == "x\u00e9y");
  CHECK(align == std::vector<Align>{{10, 11}, {11, 14}, {11, 14}, {14, 15}});
  // Decomposition: every piece of a character keeps the character's range.
  air::train::unicode_normalize("\u00e9", UnicodeForm::kNfd, out, nullptr, 0, &align);
  CHECK(out == "e\u0301");
  CHECK(align == std::vector<Align>{{0, 2}, {0, 2}, {0, 2}});
}

TEST_CASE("marks put in canonical order share the range of their run, so ranges start in order") {
  std::string out;
  std::vector<Align> align;
  // q + dot above (230) + dot below (220): reordered to q, dot below, dot above; no composition exists.
  air::train::unicode_normalize("q\u0307\u0323", UnicodeForm::kNfc, out, nullptr, 0, &align);
  CHECK(out == "q\u0323\u0307");
  CHECK(align == std::vector<Align>{{0, 1}, {1, 5}, {1, 5}, {1, 5}, {1, 5}});
}
