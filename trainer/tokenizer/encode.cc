// Encoding with a loaded tokenizer.json, in Hugging Face's order: added tokens with `normalized: false` are
// cut out of the raw text; each remaining piece is normalized; added tokens with `normalized: true` are cut
// out of that; the rest is pre-tokenized and BPE-merged piece by piece; the template adds BOS/EOS.
// With offsets, every byte made by a normalizer or pre-tokenizer remembers where it came from (`Align`),
// so each token's range points into the caller's text.
#include <algorithm>
#include <deque>

#include "trainer/tokenizer/impl.h"
#include "trainer/tokenizer/unicode.h"

namespace air::train {
namespace {

// Start of the whitespace run that ends `s` (Rust char::is_whitespace).
size_t trailing_space_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t b = prev_utf8_char_start(s, end);
    size_t i = b;
    if (!is_white_space(next_utf8_char(s, i))) break;
    end = b;
  }
  return end;
}

size_t leading_space_length(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!is_white_space(next_utf8_char(s, j))) break;
    i = j;
  }
  return i;
}

bool is_word_char_at(const SplitRegex& word_char, std::string_view ch) {
  size_t b, e;
  return !ch.empty() && word_char.find(ch, 0, b, e);
}

// Cuts the added tokens of `m` out of `text` the way Hugging Face's AddedVocabulary::find_matches does,
// calling emit(token or nullptr, piece) in order.
template <typename Emit>
void split_on_added(const Tokenizer::Impl& t, const AddedTokenMatcher& m, std::string_view text, Emit&& emit) {
  size_t done = 0;  // end of what has been emitted
  size_t from = 0;  // where the matcher resumes
  size_t at = 0;
  while (const AddedToken* tok = m.find(text, from, at)) {
    size_t start = at, stop = at + tok->content.size();
    from = stop;
    if (start < done) continue;  // swallowed by the previous token's rstrip
    if (tok->single_word) {
      size_t prev = start == 0 ? 0 : prev_utf8_char_start(text, start);
      bool left_ok = start == 0 || !is_word_char_at(*t.word_char, text.substr(prev, start - prev));
      size_t next = stop;
      if (stop < text.size()) next_utf8_char(text, next);
      bool right_ok = stop == text.size() || !is_word_char_at(*t.word_char, text.substr(stop, next - stop));
      if (!left_ok || !right_ok) continue;
    }
    if (tok->lstrip) start = std::max(trailing_space_start(text.substr(0, start)), done);
    if (tok->rstrip) stop += leading_space_length(text.substr(stop));
    if (done < start) emit(nullptr, text.substr(done, start - done));
    emit(tok, text.substr(start, stop - start));
    done = stop;
  }
  if (done < text.size()) emit(nullptr, text.substr(done));
}

// A piece of text on its way to the model: a view into the caller's text or into a buffer a normalizer or
// pre-tokenizer wrote. `align` (one entry per byte) says where a buffer's bytes came from; it is only kept
// when offsets are wanted. `at_start`: the piece begins where the text begins (Metaspace's "first").
struct Span {
  std::string_view s;
  const Align* align = nullptr;
  bool at_start = false;
};

struct Buffer {
  std::string text;
  std::vector<Align> align;
};

class Encoder {
 public:
  Encoder(const Tokenizer::Impl& t, std::string_view text, std::vector<int32_t>& out,
          std::vector<std::pair<uint32_t, uint32_t>>* offsets)
      : t_(t), text_(text), out_(out), offsets_(offsets) {}

  void run(bool add_special) {
    out_.reserve(text_.size() / 3 + 4);
    if (add_special) add_fixed(t_.template_prefix, 0);
    split_on_added(t_, t_.raw_matcher, text_, [&](const AddedToken* tok, std::string_view piece) {
      Span span{piece, nullptr, piece.data() == text_.data()};
      if (tok) return add_token(tok->id, span, 0, piece.size());
      Span normalized = normalize(span);
      split_on_added(t_, t_.normalized_matcher, normalized.s, [&](const AddedToken* tok2, std::string_view p2) {
        size_t at = static_cast<size_t>(p2.data() - normalized.s.data());
        if (tok2) return add_token(tok2->id, normalized, at, at + p2.size());
        pre_tokenize_and_merge(sub(normalized, at, p2.size()));
      });
    });
    if (add_special) add_fixed(t_.template_suffix, text_.size());
  }

 private:
  bool want() const { return offsets_ != nullptr; }

  static Span sub(const Span& p, size_t at, size_t len) {
    return {p.s.substr(at, len), p.align ? p.align + at : nullptr, p.at_start && at == 0};
  }

  // Where byte i of p came from in the text.
  Align origin(const Span& p, size_t i) const {
    if (p.align) return p.align[i];
    auto k = static_cast<uint32_t>(p.s.data() - text_.data() + i);
    return {k, k + 1};
  }

  // The text range that bytes [b, e) of p came from (e > b).
  Align range(const Span& p, size_t b, size_t e) const {
    if (!p.align) return {origin(p, b).first, origin(p, e - 1).second};
    Align r = p.align[b];
    for (size_t k = b + 1; k < e; ++k) {
      r.first = std::min(r.first, p.align[k].first);
      r.second = std::max(r.second, p.align[k].second);
    }
    return r;
  }

  void add_fixed(const std::vector<int32_t>& ids, size_t at) {
    out_.insert(out_.end(), ids.begin(), ids.end());
    auto a = static_cast<uint32_t>(at);
    if (offsets_) offsets_->insert(offsets_->end(), ids.size(), {a, a});
  }

  void add_token(int32_t id, const Span& p, size_t b, size_t e) {
    out_.push_back(id);
    if (offsets_) offsets_->push_back(range(p, b, e));
  }

  // A new buffer and the span over it, once it is filled.
  Buffer& new_buffer() { return buffers_.emplace_back(); }
  Span span_of(const Buffer& b, bool at_start) const {
    return {b.text, want() ? b.align.data() : nullptr, at_start};
  }
  void copy(Buffer& b, const Span& p, size_t from, size_t to) const {
    b.text.append(p.s.substr(from, to - from));
    if (want()) {
      for (size_t k = from; k < to; ++k) b.align.push_back(origin(p, k));
    }
  }
  void insert(Buffer& b, std::string_view s, Align a) const {
    b.text.append(s);
    if (want()) b.align.insert(b.align.end(), s.size(), a);
  }
  // Inserted text has an empty range where the next original byte is.
  Align inserted_at(const Span& p) const {
    uint32_t o = p.s.empty() ? 0 : origin(p, 0).first;
    return {o, o};
  }

  // Every occurrence of `pattern` in p becomes `content` (which spans the text the occurrence came from).
  Span replace(const Span& p, std::string_view pattern, std::string_view content) {
    size_t hit = p.s.find(pattern);
    if (hit == std::string_view::npos) return p;
    Buffer& b = new_buffer();
    b.text.reserve(p.s.size() + p.s.size() / 2);
    size_t done = 0;
    for (; hit != std::string_view::npos; hit = p.s.find(pattern, done)) {
      copy(b, p, done, hit);
      insert(b, content, want() ? range(p, hit, hit + pattern.size()) : Align{});
      done = hit + pattern.size();
    }
    copy(b, p, done, p.s.size());
    return span_of(b, p.at_start);
  }

  Span prepend(const Span& p, std::string_view prefix) {
    Buffer& b = new_buffer();
    insert(b, prefix, want() ? inserted_at(p) : Align{});
    copy(b, p, 0, p.s.size());
    return span_of(b, p.at_start);
  }

  Span normalize(Span p) {
    for (const NormalizerStep& n : t_.normalizers) {
      if (p.s.empty()) return p;
      switch (n.kind) {
        case NormalizerStep::Kind::kUnicode: {
          if (is_normalized_quick(p.s, n.form)) break;
          Buffer& b = new_buffer();
          unicode_normalize(p.s, n.form, b.text, p.align,
                            p.align || !want() ? 0 : static_cast<size_t>(p.s.data() - text_.data()),
                            want() ? &b.align : nullptr);
          p = span_of(b, p.at_start);
          break;
        }
        case NormalizerStep::Kind::kReplace:
          p = replace(p, n.pattern, n.content);
          break;
        case NormalizerStep::Kind::kPrepend:
          p = prepend(p, n.content);
          break;
        case NormalizerStep::Kind::kStrip: {
          size_t b = n.left ? leading_space_length(p.s) : 0;
          size_t e = n.right ? std::max(b, trailing_space_start(p.s)) : p.s.size();
          p = sub(p, b, e - b);
          break;
        }
      }
    }
    return p;
  }

  // Hugging Face's split with a delimiter behaviour: `matches` are the delimiter ranges in order.
  static void split_by(const Span& p, const std::vector<std::pair<size_t, size_t>>& matches, SplitBehavior how,
                       bool invert, std::vector<Span>& out) {
    struct Part {
      size_t b, e;
      bool match;
    };
    // Scratch kept per thread: this runs once per piece, and allocating two vectors each time showed in profiles.
    thread_local std::vector<Part> parts;
    thread_local std::vector<std::pair<size_t, size_t>> pieces;
    parts.clear();
    pieces.clear();
    size_t pos = 0;
    for (auto [b, e] : matches) {
      if (b > pos) parts.push_back({pos, b, invert});
      parts.push_back({b, e, !invert});
      pos = e;
    }
    if (pos < p.s.size()) parts.push_back({pos, p.s.size(), invert});
    bool previous_match = false;
    switch (how) {
      case SplitBehavior::kIsolated:
        for (const Part& x : parts) pieces.emplace_back(x.b, x.e);
        break;
      case SplitBehavior::kRemoved:
        for (const Part& x : parts) {
          if (!x.match) pieces.emplace_back(x.b, x.e);
        }
        break;
      case SplitBehavior::kMergedWithPrevious:
        for (const Part& x : parts) {
          if (x.match && !previous_match && !pieces.empty()) {
            pieces.back().second = x.e;
          } else {
            pieces.emplace_back(x.b, x.e);
          }
          previous_match = x.match;
        }
        break;
      case SplitBehavior::kMergedWithNext:
        for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
          if (it->match && !previous_match && !pieces.empty()) {
            pieces.back().first = it->b;
          } else {
            pieces.emplace_back(it->b, it->e);
          }
          previous_match = it->match;
        }
        std::reverse(pieces.begin(), pieces.end());
        break;
      case SplitBehavior::kContiguous:
        for (size_t i = 0; i < parts.size(); ++i) {
          if (i > 0 && parts[i].match == parts[i - 1].match) {
            pieces.back().second = parts[i].e;
          } else {
            pieces.emplace_back(parts[i].b, parts[i].e);
          }
        }
        break;
    }
    for (auto [b, e] : pieces) {
      if (e > b) out.push_back(sub(p, b, e - b));
    }
  }

  static void regex_matches(const SplitRegex& re, std::string_view s, std::vector<std::pair<size_t, size_t>>& m) {
    m.clear();
    size_t search = 0, b = 0, e = 0;
    while (search <= s.size() && re.find(s, search, b, e)) {
      if (e == b) {  // an empty match splits nothing; step over one whole character
        search = b + 1;
        while (search < s.size() && (static_cast<unsigned char>(s[search]) & 0xC0) == 0x80) ++search;
        continue;
      }
      m.emplace_back(b, e);
      search = e;
    }
  }

  static void literal_matches(std::string_view s, std::string_view what, std::vector<std::pair<size_t, size_t>>& m) {
    m.clear();
    for (size_t at = s.find(what); at != std::string_view::npos; at = s.find(what, at + what.size())) {
      m.emplace_back(at, at + what.size());
    }
  }

  void pre_tokenize_and_merge(Span segment) {
    if (segment.s.empty()) return;
    std::vector<Span> pieces{segment}, next;
    std::vector<std::pair<size_t, size_t>> matches;
    for (const PreTokenizerStep& step : t_.steps) {
      next.clear();
      for (Span p : pieces) {
        switch (step.kind) {
          case PreTokenizerStep::Kind::kSplit:
            regex_matches(*step.regex, p.s, matches);
            split_by(p, matches, step.behavior, step.invert, next);
            break;
          case PreTokenizerStep::Kind::kByteLevel:
            if (step.add_prefix_space && p.s.front() != ' ') p = prepend(p, " ");
            if (!step.regex) {
              next.push_back(p);
              break;
            }
            regex_matches(*step.regex, p.s, matches);
            split_by(p, matches, SplitBehavior::kIsolated, false, next);
            break;
          case PreTokenizerStep::Kind::kMetaspace: {
            p = replace(p, " ", step.replacement);
            bool add = step.prepend == PreTokenizerStep::Prepend::kAlways ||
                       (step.prepend == PreTokenizerStep::Prepend::kFirst && p.at_start);
            if (add && p.s.compare(0, step.replacement.size(), step.replacement) != 0) {
              p = prepend(p, step.replacement);
            }
            if (!step.split) {
              next.push_back(p);
              break;
            }
            literal_matches(p.s, step.replacement, matches);
            split_by(p, matches, SplitBehavior::kMergedWithNext, false, next);
            break;
          }
        }
      }
      pieces.swap(next);
    }
    std::vector<uint32_t> lengths;
    for (const Span& p : pieces) {
      if (p.s.empty()) continue;
      if (!offsets_) {
        t_.model->encode(p.s, out_);
        continue;
      }
      lengths.clear();
      t_.model->encode(p.s, out_, &lengths);
      size_t pos = 0;
      for (uint32_t len : lengths) {
        offsets_->push_back(range(p, pos, pos + len));
        pos += len;
      }
    }
  }

  const Tokenizer::Impl& t_;
  std::string_view text_;
  std::vector<int32_t>& out_;
  std::vector<std::pair<uint32_t, uint32_t>>* offsets_;
  std::deque<Buffer> buffers_;  // stable addresses: spans point into them
};

}  // namespace

void encode_into(const Tokenizer::Impl& t, std::string_view text, bool add_special, std::vector<int32_t>& out,
                 std::vector<std::pair<uint32_t, uint32_t>>* offsets) {
  Encoder(t, text, out, offsets).run(add_special);
}

}  // namespace air::train
