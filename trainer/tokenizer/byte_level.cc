// The GPT-2 byte-level alphabet (bytes_to_unicode): printable Latin-1 bytes stand for themselves, the
// other 68 bytes take the code points 256, 257, ... in byte order.
#include "trainer/tokenizer/byte_level.h"

#include <array>
#include <unordered_map>

namespace air::train {
namespace {

std::string utf8_of(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

bool stands_for_itself(int b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

struct Alphabet {
  std::array<std::string, 256> chars;
  std::unordered_map<char32_t, unsigned char> bytes;  // code point -> byte
  Alphabet() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      char32_t cp = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
      chars[b] = utf8_of(cp);
      bytes[cp] = static_cast<unsigned char>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

// Decodes one UTF-8 character of at most 3 bytes (the alphabet lies below U+0800); nullopt if malformed.
std::optional<char32_t> next_char(std::string_view s, size_t& i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 0;
  if (len == 0 || i + len > s.size()) return std::nullopt;
  char32_t cp = c & (len == 2 ? 0x1F : 0x0F);
  for (int k = 1; k < len; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (cc & 0x3F);
  }
  i += len;
  return cp;
}

}  // namespace

const std::string& byte_level_char(unsigned char byte) { return alphabet().chars[byte]; }

std::optional<std::string> byte_level_to_bytes(std::string_view text) {
  const auto& map = alphabet().bytes;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    auto cp = next_char(text, i);
    if (!cp) return std::nullopt;
    auto it = map.find(*cp);
    if (it == map.end()) return std::nullopt;
    out += static_cast<char>(it->second);
  }
  return out;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += byte_level_char(static_cast<unsigned char>(c));
  return out;
}

}  // namespace air::train
