// Unicode normalization (UAX #15): full decomposition, canonical ordering, canonical composition, with
// Hangul by arithmetic. See normalize.h.
#include "trainer/tokenizer/normalize.h"

#include <algorithm>
#include <bitset>
#include <memory>
#include <unordered_map>

#include "trainer/tokenizer/unicode.h"

namespace air::train {
namespace {

struct CombiningRange {
  char32_t first, last;
  uint8_t ccc;
};
struct DecompositionEntry {
  char32_t cp;
  uint8_t compat;
  uint16_t offset;
  uint8_t length;
};
struct CompositionEntry {
  char32_t first, second, composite;
};
struct CodeRange {
  char32_t first, last;
};

#include "trainer/tokenizer/normalization_table.inc"

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

// Lookups built once from the generated tables. Code points below kBitsetSize answer "stable?" from a bitset.
constexpr size_t kBitsetSize = 0x30000;
struct Tables {
  std::bitset<kBitsetSize> unstable_nfc, unstable_nfkc;
  std::unordered_map<char32_t, const DecompositionEntry*> decomposition;
  std::unordered_map<uint64_t, char32_t> composition;
  Tables() {
    auto fill = [](std::bitset<kBitsetSize>& bits, const CodeRange* r, size_t n) {
      for (size_t i = 0; i < n; ++i) {
        for (char32_t c = r[i].first; c <= r[i].last && c < kBitsetSize; ++c) bits.set(c);
      }
    };
    fill(unstable_nfc, kNotStableNfc, std::size(kNotStableNfc));
    fill(unstable_nfkc, kNotStableNfkc, std::size(kNotStableNfkc));
    decomposition.reserve(std::size(kDecomposition));
    for (const auto& d : kDecomposition) decomposition.emplace(d.cp, &d);
    composition.reserve(std::size(kComposition));
    for (const auto& c : kComposition) composition.emplace(key(c.first, c.second), c.composite);
  }
  static uint64_t key(char32_t a, char32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }
};

const Tables& tables() {
  static const auto t = std::make_unique<Tables>();
  return *t;
}

bool in_ranges(char32_t c, const CodeRange* r, size_t n) {
  const CodeRange* end = r + n;
  const CodeRange* it = std::upper_bound(r, end, c, [](char32_t v, const CodeRange& x) { return v < x.first; });
  return it != r && c <= (it - 1)->last;
}

bool unstable(char32_t c, bool compat) {
  if (c < 0x300) return compat && c >= 0xA0 && tables().unstable_nfkc[c];
  if (c < kBitsetSize) return (compat ? tables().unstable_nfkc : tables().unstable_nfc)[c];
  return compat ? in_ranges(c, kNotStableNfkc, std::size(kNotStableNfkc))
                : in_ranges(c, kNotStableNfc, std::size(kNotStableNfc));
}

uint8_t combining_class(char32_t c) {
  if (c < 0x300) return 0;
  const auto* end = std::end(kCombiningClass);
  const auto* it = std::upper_bound(std::begin(kCombiningClass), end, c,
                                    [](char32_t v, const CombiningRange& x) { return v < x.first; });
  if (it == std::begin(kCombiningClass) || c > (it - 1)->last) return 0;
  return (it - 1)->ccc;
}

// One character on its way through normalization: its code point (or, when `raw`, one byte of invalid
// UTF-8 copied as is), its combining class and the original range it came from.
struct Char {
  char32_t cp;
  uint8_t ccc;
  bool raw;
  Align from;
};

void decompose(char32_t c, bool compat, Align from, std::vector<Char>& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    char32_t s = c - kSBase;
    out.push_back({kLBase + s / kNCount, 0, false, from});
    out.push_back({kVBase + (s % kNCount) / kTCount, 0, false, from});
    if (s % kTCount != 0) out.push_back({kTBase + s % kTCount, 0, false, from});
    return;
  }
  const auto& map = tables().decomposition;
  auto it = c < 0xA0 ? map.end() : map.find(c);
  if (it == map.end() || (it->second->compat && !compat)) {
    out.push_back({c, combining_class(c), false, from});
    return;
  }
  for (uint8_t k = 0; k < it->second->length; ++k) decompose(kDecomposed[it->second->offset + k], compat, from, out);
}

char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  auto it = tables().composition.find(Tables::key(a, b));
  return it == tables().composition.end() ? 0 : it->second;
}

// Canonical ordering: within each run of non-starters, a stable sort by combining class. A run whose order
// changed gets the range of the whole run for each of its characters, so ranges still start in order.
void reorder(std::vector<Char>& chars) {
  size_t i = 0;
  while (i < chars.size()) {
    if (chars[i].ccc == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < chars.size() && chars[j].ccc != 0) ++j;
    auto first = chars.begin() + static_cast<std::ptrdiff_t>(i), last = chars.begin() + static_cast<std::ptrdiff_t>(j);
    auto by_class = [](const Char& a, const Char& b) { return a.ccc < b.ccc; };
    if (!std::is_sorted(first, last, by_class)) {
      std::stable_sort(first, last, by_class);
      Align run = first->from;
      for (auto it = first; it != last; ++it) {
        run = {std::min(run.first, it->from.first), std::max(run.second, it->from.second)};
      }
      for (auto it = first; it != last; ++it) it->from = run;
    }
    i = j;
  }
}

// Canonical composition (UAX #15's algorithm): a character joins the last starter unless a character of the
// same or a higher class stands between them.
void compose(std::vector<Char>& chars) {
  if (chars.empty()) return;
  std::vector<Char> out;
  out.reserve(chars.size());
  size_t starter = 0;
  bool have_starter = false;
  int last_class = -1;
  for (const Char& c : chars) {
    if (have_starter && !c.raw && (last_class < c.ccc || last_class == 0)) {
      if (char32_t composite = compose_pair(out[starter].cp, c.cp)) {
        Char& s = out[starter];
        s.cp = composite;
        s.from = {std::min(s.from.first, c.from.first), std::max(s.from.second, c.from.second)};
        continue;
      }
    }
    if (c.ccc == 0) {
      starter = out.size();
      have_starter = !c.raw;
      last_class = 0;
    } else {
      last_class = have_starter || last_class >= 0 ? c.ccc : 256;
    }
    out.push_back(c);
  }
  chars.swap(out);
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_compat(UnicodeForm f) { return f == UnicodeForm::kNfkc || f == UnicodeForm::kNfkd; }
bool is_composed(UnicodeForm f) { return f == UnicodeForm::kNfc || f == UnicodeForm::kNfkc; }

}  // namespace

const char* unicode_data_version() { return kUnicodeVersion; }

bool is_normalized_quick(std::string_view text, UnicodeForm form) {
  bool compat = is_compat(form);
  bool composed = is_composed(form);
  for (size_t i = 0; i < text.size();) {
    auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    char32_t c = next_utf8_char(text, i);
    if (unstable(c, compat)) return false;
    // Decomposed forms: every character with a decomposition (Hangul syllables included) changes.
    if (!composed && ((c >= kSBase && c < kSBase + kSCount) || tables().decomposition.count(c))) return false;
  }
  return true;
}

void unicode_normalize(std::string_view text, UnicodeForm form, std::string& out, const Align* align_in,
                       size_t base, std::vector<Align>* align_out) {
  bool compat = is_compat(form);
  std::vector<Char> chars;
  chars.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    size_t start = i;
    char32_t c = next_utf8_char(text, i);
    Align from = align_in ? Align{align_in[start].first, align_in[i - 1].second}
                          : Align{static_cast<uint32_t>(base + start), static_cast<uint32_t>(base + i)};
    bool raw = c == 0xFFFD && !(i - start == 3 && text.compare(start, 3, "\xEF\xBF\xBD") == 0);
    if (raw) {
      chars.push_back({static_cast<unsigned char>(text[start]), 0, true, from});
    } else {
      decompose(c, compat, from, chars);
    }
  }
  reorder(chars);
  if (is_composed(form)) compose(chars);
  out.clear();
  out.reserve(text.size() + 8);
  if (align_out) {
    align_out->clear();
    align_out->reserve(text.size() + 8);
  }
  for (const Char& c : chars) {
    size_t before = out.size();
    if (c.raw) {
      out += static_cast<char>(c.cp);
    } else {
      append_utf8(c.cp, out);
    }
    if (align_out) align_out->insert(align_out->end(), out.size() - before, c.from);
  }
}

}  // namespace air::train
