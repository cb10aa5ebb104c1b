// Base64 and percent-encoding, written out by hand: small, branch-light, and free of OpenSSL's BIO
// newline quirks.
#include "core/base/codec.h"

#include <array>

namespace air {

namespace {

constexpr char kStd[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// Maps a character of either alphabet to its 6-bit value; -1 for anything else.
std::array<int, 256> decode_table() {
  std::array<int, 256> t{};
  t.fill(-1);
  for (int i = 0; i < 64; ++i) {
    t[static_cast<unsigned char>(kStd[i])] = i;
    t[static_cast<unsigned char>(kUrl[i])] = i;
  }
  return t;
}

bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

}  // namespace

std::string base64_encode(const std::string& bytes, Base64Alphabet alphabet, bool pad) {
  const char* a = alphabet == Base64Alphabet::kUrl ? kUrl : kStd;
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto b = [&](size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    unsigned v = (b(i) << 16) | (b(i + 1) << 8) | b(i + 2);
    out += a[(v >> 18) & 63];
    out += a[(v >> 12) & 63];
    out += a[(v >> 6) & 63];
    out += a[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    unsigned v = b(i) << 16;
    out += a[(v >> 18) & 63];
    out += a[(v >> 12) & 63];
    if (pad) out += "==";
  } else if (rest == 2) {
    unsigned v = (b(i) << 16) | (b(i + 1) << 8);
    out += a[(v >> 18) & 63];
    out += a[(v >> 12) & 63];
    out += a[(v >> 6) & 63];
    if (pad) out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(const std::string& text) {
  static const std::array<int, 256> table = decode_table();
  std::string out;
  out.reserve(text.size() / 4 * 3 + 3);
  unsigned acc = 0;
  int bits = 0;
  size_t chars = 0, padding = 0;
  for (unsigned char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return std::nullopt;  // data after padding
    int v = table[c];
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    ++chars;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (chars % 4 == 1) return std::nullopt;  // no encoding ends with a lone 6-bit group
  if (padding > 2 || (padding > 0 && (chars + padding) % 4 != 0)) return std::nullopt;
  return out;
}

std::string percent_encode(const std::string& bytes, PercentStyle style, bool lower_hex) {
  const char* hex = lower_hex ? "0123456789abcdef" : "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size() * 3);
  for (unsigned char c : bytes) {
    if (is_unreserved(c) || (style == PercentStyle::kPath && c == '/')) {
      out += static_cast<char>(c);
    } else if (style == PercentStyle::kForm && c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace air
