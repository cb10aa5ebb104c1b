// Byte encodings shared by the secrets API, its client and the log redactor: base64 (standard and URL-safe,
// with or without padding) and percent-encoding. Plain functions on std::string (bytes, not text).
#pragma once
#include <optional>
#include <string>

namespace air {

enum class Base64Alphabet { kStandard, kUrl };

std::string base64_encode(const std::string& bytes, Base64Alphabet alphabet = Base64Alphabet::kStandard,
                          bool pad = true);
// Accepts either alphabet, with or without padding, and ignores ASCII whitespace. nullopt when the text
// is not base64 (a bad character, or a length that no encoding produces).
std::optional<std::string> base64_decode(const std::string& text);

enum class PercentStyle {
  kComponent,  // RFC 3986: everything but A-Z a-z 0-9 - . _ ~ is escaped (encodeURIComponent)
  kPath,       // like kComponent but '/' stays (Python's urllib.parse.quote default)
  kForm,       // like kComponent but ' ' becomes '+' (application/x-www-form-urlencoded, quote_plus)
};
std::string percent_encode(const std::string& bytes, PercentStyle style = PercentStyle::kComponent,
                           bool lower_hex = false);

}  // namespace air
