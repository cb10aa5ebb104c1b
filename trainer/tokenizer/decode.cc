// Decoding: ids to token strings, then tokenizer.json's decoders in order over the list of strings, as Hugging
// Face's decode_chain does (ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace).
#include <stdexcept>

#include "trainer/tokenizer/byte_level.h"
#include "trainer/tokenizer/impl.h"
#include "trainer/tokenizer/unicode.h"

namespace air::train {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

void replace_all(std::string& s, std::string_view what, std::string_view with) {
  if (what.empty()) return;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size())) {
    s.replace(at, what.size(), with);
  }
}

// "<0x41>" -> 0x41; -1 when the token is not a byte token.
int byte_token(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

bool valid_utf8(std::string_view s) { return utf8_lossy(s) == s; }

// Consecutive byte tokens become their UTF-8 text, or one U+FFFD per byte when it is not valid UTF-8.
void byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string bytes;
  auto flush = [&] {
    if (bytes.empty()) return;
    if (valid_utf8(bytes)) {
      out.push_back(bytes);
    } else {
      for (size_t i = 0; i < bytes.size(); ++i) out.emplace_back(kReplacement);
    }
    bytes.clear();
  };
  for (std::string& t : tokens) {
    int b = byte_token(t);
    if (b >= 0) {
      bytes += static_cast<char>(b);
      continue;
    }
    flush();
    out.push_back(std::move(t));
  }
  flush();
  tokens.swap(out);
}

// Strips up to `start` leading and `stop` trailing copies of the character `c` from each token.
void strip(std::vector<std::string>& tokens, std::string_view c, size_t start, size_t stop) {
  for (std::string& t : tokens) {
    size_t b = 0, e = t.size();
    for (size_t k = 0; k < start && e - b >= c.size() && t.compare(b, c.size(), c) == 0; ++k) b += c.size();
    for (size_t k = 0; k < stop && e - b >= c.size() && t.compare(e - c.size(), c.size(), c) == 0; ++k) e -= c.size();
    t = t.substr(b, e - b);
  }
}

}  // namespace

std::string decode_ids(const Tokenizer::Impl& t, const std::vector<int32_t>& ids, bool skip_special) {
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= t.present.size() || !t.present[id]) {
      throw std::runtime_error(t.name + ": token id " + std::to_string(id) + " is not in the vocabulary");
    }
  }
  if (t.byte_level) {  // the ByteLevel decoder alone (the loader insists): bytes of each token, lossy UTF-8
    std::string bytes;
    for (int32_t id : ids) {
      if (!(skip_special && t.special[id])) bytes += t.token_bytes[id];
    }
    return utf8_lossy(bytes);
  }
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (!(skip_special && t.special[id])) tokens.push_back(t.tokens[id]);
  }
  if (t.decoders.empty()) {  // Hugging Face joins the tokens with spaces when there is no decoder
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const DecoderStep& d : t.decoders) {
    switch (d.kind) {
      case DecoderStep::Kind::kByteLevel:  // refused for non-byte-level tokenizers by the loader
        break;
      case DecoderStep::Kind::kReplace:
        for (std::string& s : tokens) replace_all(s, d.pattern, d.content);
        break;
      case DecoderStep::Kind::kByteFallback:
        byte_fallback(tokens);
        break;
      case DecoderStep::Kind::kFuse: {
        std::string all;
        for (const std::string& s : tokens) all += s;
        tokens.assign(1, std::move(all));
        break;
      }
      case DecoderStep::Kind::kStrip:
        strip(tokens, d.content, d.start, d.stop);
        break;
      case DecoderStep::Kind::kMetaspace:
        // Each replacement character becomes a space, except in the first token, where it goes (when the
        // pre-tokenizer prepends one), as in Hugging Face's Metaspace decoder.
        for (size_t i = 0; i < tokens.size(); ++i) replace_all(tokens[i], d.pattern, i == 0 && d.prepend ? "" : " ");
        break;
    }
  }
  std::string out;
  for (const std::string& s : tokens) out += s;
  return out;
}

}  // namespace air::train
