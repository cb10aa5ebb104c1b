// UTF-8 helpers for the tokenizer (see tokenizer_unicode.h).
#include "trainer/tokenizer/unicode.h"

namespace air::train {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// For a lead byte: the sequence length and the allowed range of the first continuation byte
// (the narrow ranges exclude overlong forms, surrogates and code points above U+10FFFF).
bool lead_info(unsigned char c, int& len, unsigned char& lo, unsigned char& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

// Number of valid bytes of the sequence starting at i (== len when complete and valid).
int valid_prefix(std::string_view s, size_t i, int len, unsigned char lo, unsigned char hi) {
  int k = 1;
  for (; k < len && i + k < s.size(); ++k) {
    auto c = static_cast<unsigned char>(s[i + k]);
    bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    if (!ok) break;
  }
  return k;
}

}  // namespace

bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

char32_t next_utf8_char(std::string_view s, size_t& i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  int len;
  unsigned char lo, hi;
  if (!lead_info(c, len, lo, hi) || valid_prefix(s, i, len, lo, hi) != len) {
    ++i;
    return 0xFFFD;
  }
  char32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

size_t prev_utf8_char_start(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && end - i < 4 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    int len;
    unsigned char lo, hi;
    if (!lead_info(c, len, lo, hi)) {
      out += kReplacement;
      ++i;
      continue;
    }
    int k = valid_prefix(s, i, len, lo, hi);
    if (k == len) {
      out.append(s.substr(i, len));
    } else {
      out += kReplacement;
    }
    i += k;
  }
  return out;
}

}  // namespace air::train
