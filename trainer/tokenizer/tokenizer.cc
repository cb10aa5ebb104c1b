// Encoding and decoding with a loaded tokenizer.json (Hugging Face `tokenizers` semantics): added tokens
// are cut out of the text first, the rest is pre-tokenized (regex split, byte-level) and BPE-merged.
#include "trainer/tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "trainer/tokenizer/impl.h"
#include "trainer/tokenizer/unicode.h"

namespace air::train {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error(path + ": read failed");
  return ss.str();
}

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

// Pre-tokenizes one segment (no added tokens in it) and BPE-merges each piece into `out`. When `offsets`
// is given, it also records each token's byte range in the whole text: `base` is the segment's offset there.
void pre_tokenize_and_merge(const Tokenizer::Impl& t, std::string_view segment, std::vector<int32_t>& out,
                            std::vector<std::pair<uint32_t, uint32_t>>* offsets = nullptr, size_t base = 0) {
  std::vector<std::string_view> pieces{segment}, next;
  // Pieces that got a leading space live here; each remembers the segment offset its second byte maps to.
  struct Prefixed {
    std::string text;
    size_t origin;
  };
  std::deque<Prefixed> prefixed;
  for (const PreTokenizerStep& step : t.steps) {
    next.clear();
    for (std::string_view p : pieces) {
      if (step.kind == PreTokenizerStep::Kind::kByteLevel && step.add_prefix_space && p.front() != ' ') {
        size_t origin = 0;
        bool found = false;
        for (const Prefixed& q : prefixed) {  // a piece cut from an earlier prefixed copy
          if (p.data() >= q.text.data() && p.data() < q.text.data() + q.text.size()) {
            size_t k = static_cast<size_t>(p.data() - q.text.data());
            origin = k == 0 ? q.origin : q.origin + k - 1;
            found = true;
          }
        }
        if (!found) origin = static_cast<size_t>(p.data() - segment.data());
        p = prefixed.emplace_back(Prefixed{" " + std::string(p), origin}).text;
      }
      if (step.regex) {
        step.regex->split_isolated(p, next);
      } else {
        next.push_back(p);
      }
    }
    pieces.swap(next);
  }
  for (std::string_view p : pieces) {
    size_t first = out.size();
    t.model->encode(p, out);
    if (!offsets) continue;
    // Where the piece starts in the segment, and how many leading bytes of it were inserted (not in the text).
    size_t start = 0, inserted = 0;
    if (p.data() >= segment.data() && p.data() <= segment.data() + segment.size()) {
      start = static_cast<size_t>(p.data() - segment.data());
    } else {
      for (const Prefixed& q : prefixed) {
        if (p.data() >= q.text.data() && p.data() < q.text.data() + q.text.size()) {
          size_t k = static_cast<size_t>(p.data() - q.text.data());
          start = k == 0 ? q.origin : q.origin + k - 1;
          inserted = k == 0 ? 1 : 0;
        }
      }
    }
    size_t pos = 0;  // bytes of the piece consumed so far
    for (size_t i = first; i < out.size(); ++i) {
      size_t len = t.token_bytes[static_cast<size_t>(out[i])].size();
      size_t b = pos < inserted ? 0 : pos - inserted;
      size_t e = pos + len < inserted ? 0 : pos + len - inserted;
      b = std::min(b, p.size() - inserted);
      e = std::min(std::max(e, b), p.size() - inserted);
      offsets->emplace_back(static_cast<uint32_t>(base + start + b), static_cast<uint32_t>(base + start + e));
      pos += len;
    }
  }
}

void apply_config_token(Tokenizer::Impl& t, const nlohmann::json& config, const char* key,
                        std::optional<int32_t>& slot) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return;
  std::string content;
  if (it->is_string()) {
    content = it->get<std::string>();
  } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    content = (*it)["content"].get<std::string>();
  } else {
    return;
  }
  auto id = t.by_token.find(content);
  if (id == t.by_token.end()) {
    throw std::runtime_error(t.name + ": tokenizer_config.json names " + key + " \"" + content +
                             "\", which is not a token of tokenizer.json");
  }
  slot = id->second;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json_text(const std::string& json_text, const std::string& name) {
  return Tokenizer(load_tokenizer_json(json_text, name));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  auto impl = load_tokenizer_json(read_file(path), path);
  // Like transformers, let tokenizer_config.json beside the file name the BOS/EOS/PAD tokens.
  auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::is_regular_file(config_path, ec)) {
    nlohmann::json config = nlohmann::json::parse(read_file(config_path.string()), nullptr, false);
    if (config.is_discarded() || !config.is_object()) {
      throw std::runtime_error(config_path.string() + ": not a valid JSON object");
    }
    apply_config_token(*impl, config, "bos_token", impl->bos);
    apply_config_token(*impl, config, "eos_token", impl->eos);
    apply_config_token(*impl, config, "pad_token", impl->pad);
  }
  return Tokenizer(std::move(impl));
}

namespace {

// encode() and encode_with_offsets() in one: `offsets` is null for the plain form.
void encode_into(const Tokenizer::Impl& t, std::string_view text, bool add_bos, std::vector<int32_t>& out,
                 std::vector<std::pair<uint32_t, uint32_t>>* offsets) {
  out.reserve(text.size() / 3 + 4);
  auto place = [&](std::string_view piece) { return static_cast<size_t>(piece.data() - text.data()); };
  auto add_fixed = [&](const std::vector<int32_t>& ids, size_t at) {
    out.insert(out.end(), ids.begin(), ids.end());
    if (offsets) offsets->insert(offsets->end(), ids.size(), {static_cast<uint32_t>(at), static_cast<uint32_t>(at)});
  };
  if (add_bos) add_fixed(t.template_prefix, 0);
  split_on_added(t, t.raw_matcher, text, [&](const AddedToken* tok, std::string_view piece) {
    if (tok) {
      out.push_back(tok->id);
      if (offsets) offsets->emplace_back(place(piece), place(piece) + piece.size());
      return;
    }
    split_on_added(t, t.normalized_matcher, piece, [&](const AddedToken* tok2, std::string_view piece2) {
      if (tok2) {
        out.push_back(tok2->id);
        if (offsets) offsets->emplace_back(place(piece2), place(piece2) + piece2.size());
      } else {
        pre_tokenize_and_merge(t, piece2, out, offsets, place(piece2));
      }
    });
  });
  if (add_bos) add_fixed(t.template_suffix, text.size());
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> out;
  encode_into(*impl_, text, add_bos, out, nullptr);
  return out;
}

Tokenizer::Encoding Tokenizer::encode_with_offsets(std::string_view text, bool add_bos) const {
  Encoding e;
  e.offsets.reserve(text.size() / 3 + 4);
  encode_into(*impl_, text, add_bos, e.ids, &e.offsets);
  return e;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  const Impl& t = *impl_;
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= t.present.size() || !t.present[id]) {
      throw std::runtime_error(t.name + ": token id " + std::to_string(id) + " is not in the vocabulary");
    }
    if (skip_special && t.special[id]) continue;
    bytes += t.token_bytes[id];
  }
  return utf8_lossy(bytes);
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->tokens.size()); }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad; }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto it = impl_->by_token.find(std::string(token));
  if (it == impl_->by_token.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  const Impl& t = *impl_;
  if (id < 0 || static_cast<size_t>(id) >= t.present.size() || !t.present[id]) return std::nullopt;
  return t.tokens[id];
}

bool Tokenizer::is_special(int32_t id) const {
  const Impl& t = *impl_;
  return id >= 0 && static_cast<size_t>(id) < t.special.size() && t.special[id];
}

}  // namespace air::train
