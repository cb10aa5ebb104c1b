// Reads a Hugging Face tokenizer.json into Tokenizer::Impl. Everything we cannot reproduce exactly is
// refused with an error that names the file and the JSON path, rather than silently encoding differently.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <unordered_set>
#include <sstream>
#include <stdexcept>

#include "trainer/tokenizer/byte_level.h"
#include "trainer/tokenizer/impl.h"
#include "trainer/tokenizer/unicode.h"

namespace air::train {
namespace {

using Json = nlohmann::json;

constexpr int32_t kMaxVocab = 1 << 24;

class Loader {
 public:
  explicit Loader(std::string name) : name_(std::move(name)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw std::runtime_error(name_ + ": " + path + ": " + message);
  }

  const Json& member(const Json& obj, const std::string& path, const char* key) const {
    if (!obj.is_object()) fail(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, std::string("missing \"") + key + "\"");
    return *it;
  }

  bool flag(const Json& obj, const std::string& path, const char* key, bool fallback) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(path + "." + key, "expected true or false");
    return it->get<bool>();
  }

  std::string string_at(const Json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string");
    return v.get<std::string>();
  }

  int32_t id_at(const Json& v, const std::string& path) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxVocab) {
      fail(path, "expected a token id (an integer from 0 to " + std::to_string(kMaxVocab - 1) + ")");
    }
    return static_cast<int32_t>(v.get<int64_t>());
  }

  std::string type_of(const Json& obj, const std::string& path) const {
    return string_at(member(obj, path, "type"), path + ".type");
  }

  void load(const Json& root, Tokenizer::Impl& t);

 private:
  void load_vocab(const Json& model, Tokenizer::Impl& t, std::unordered_map<std::string, int32_t>& vocab);
  std::vector<BpeMerge> load_merges(const Json& model, const std::unordered_map<std::string, int32_t>& vocab);
  void load_model(const Json& model, Tokenizer::Impl& t);
  void load_added(const Json& list, Tokenizer::Impl& t);
  std::string literal_pattern(const Json& obj, const std::string& path) const;
  std::string metaspace_options(const Json& obj, const std::string& path, PreTokenizerStep::Prepend& prepend) const;
  void load_normalizer(const Json& norm, const std::string& path, Tokenizer::Impl& t);
  void load_pre_tokenizer(const Json& pre, const std::string& path, Tokenizer::Impl& t);
  void load_post_processor(const Json& post, const std::string& path, Tokenizer::Impl& t);
  void load_decoder(const Json& dec, const std::string& path, Tokenizer::Impl& t);
  void set_token(Tokenizer::Impl& t, int32_t id, const std::string& text);

  std::string name_;
};

void Loader::set_token(Tokenizer::Impl& t, int32_t id, const std::string& text) {
  if (static_cast<size_t>(id) >= t.tokens.size()) {
    t.tokens.resize(id + 1);
    t.token_bytes.resize(id + 1);
    t.present.resize(id + 1, 0);
    t.special.resize(id + 1, 0);
  }
  t.tokens[id] = text;
  // The ByteLevel decoder maps a token's characters back to bytes, or keeps the token's own UTF-8
  // when one character is outside the byte alphabet.
  t.token_bytes[id] = t.byte_level ? byte_level_to_bytes(text).value_or(text) : text;
  t.present[id] = 1;
}

void Loader::load_vocab(const Json& model, Tokenizer::Impl& t,
                        std::unordered_map<std::string, int32_t>& vocab) {
  const Json& v = member(model, "model", "vocab");
  if (!v.is_object()) fail("model.vocab", "expected an object mapping tokens to ids");
  std::unordered_map<int32_t, std::string> seen;
  seen.reserve(v.size());
  vocab.reserve(v.size());
  for (auto it = v.begin(); it != v.end(); ++it) {
    int32_t id = id_at(it.value(), "model.vocab[\"" + it.key() + "\"]");
    auto [prev, fresh] = seen.emplace(id, it.key());
    if (!fresh) fail("model.vocab", "id " + std::to_string(id) + " is given to both \"" + prev->second +
                                        "\" and \"" + it.key() + "\"");
    vocab.emplace(it.key(), id);
    set_token(t, id, it.key());
    t.by_token[it.key()] = id;
  }
}

std::vector<BpeMerge> Loader::load_merges(const Json& model,
                                          const std::unordered_map<std::string, int32_t>& vocab) {
  const Json& m = member(model, "model", "merges");
  if (!m.is_array()) fail("model.merges", "expected an array");
  std::vector<BpeMerge> merges;
  merges.reserve(m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    std::string path = "model.merges[" + std::to_string(i) + "]";
    std::string a, b;
    if (m[i].is_string()) {
      // Tokens never hold a real space (byte-level writes it "Ġ", SentencePiece "▁"), so "a b" splits
      // unambiguously.
      const std::string& s = m[i].get_ref<const std::string&>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        fail(path, "expected \"left right\" (two tokens separated by one space), got \"" + s + "\"");
      }
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m[i].is_array() && m[i].size() == 2 && m[i][0].is_string() && m[i][1].is_string()) {
      a = m[i][0].get<std::string>();
      b = m[i][1].get<std::string>();
    } else {
      fail(path, "expected \"left right\" or [\"left\", \"right\"]");
    }
    auto ia = vocab.find(a), ib = vocab.find(b), ir = vocab.find(a + b);
    for (auto [it, tok] : {std::pair{ia, &a}, std::pair{ib, &b}}) {
      if (it == vocab.end()) fail(path, "token \"" + *tok + "\" is not in model.vocab");
    }
    if (ir == vocab.end()) fail(path, "the merged token \"" + a + b + "\" is not in model.vocab");
    merges.push_back({ia->second, ib->second, ir->second});
  }
  return merges;
}

void Loader::load_model(const Json& model, Tokenizer::Impl& t) {
  if (!model.is_object()) fail("model", "expected an object");
  auto type = model.contains("type") ? type_of(model, "model") : std::string("BPE");
  if (type != "BPE") fail("model.type", "\"" + type + "\" is not supported (only \"BPE\")");
  if (model.contains("dropout") && !model["dropout"].is_null() &&
      !(model["dropout"].is_number() && model["dropout"].get<double>() == 0.0)) {
    fail("model.dropout", "BPE dropout is not supported (it makes encoding random)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && !model[key].is_null() && model[key] != "") {
      fail(std::string("model.") + key, "is not supported (no supported model family uses it)");
    }
  }
  BpeModelOptions options;
  options.byte_level = t.byte_level;
  options.byte_fallback = flag(model, "model", "byte_fallback", false);
  if (options.byte_fallback && t.byte_level) {
    fail("model.byte_fallback", "is not supported with a ByteLevel pre-tokenizer (byte-level BPE never needs it)");
  }
  std::unordered_map<std::string, int32_t> vocab;
  load_vocab(model, t, vocab);
  std::vector<BpeMerge> merges = load_merges(model, vocab);

  options.ignore_merges = flag(model, "model", "ignore_merges", false);
  options.fuse_unk = flag(model, "model", "fuse_unk", false);
  if (model.contains("unk_token") && !model["unk_token"].is_null()) {
    std::string unk = string_at(model["unk_token"], "model.unk_token");
    auto it = vocab.find(unk);
    if (it == vocab.end()) fail("model.unk_token", "\"" + unk + "\" is not in model.vocab");
    options.unk_id = it->second;
  }
  if (!t.byte_level) {  // SentencePiece-style: the model works on the text's characters as they are
    t.model = std::make_unique<BpeModel>(std::move(vocab), merges, options);
    return;
  }
  // The model works on raw bytes; tokens outside the byte alphabet can never be produced, so drop them.
  std::unordered_map<std::string, int32_t> raw;
  raw.reserve(vocab.size());
  for (auto& [tok, id] : vocab) {
    if (auto bytes = byte_level_to_bytes(tok)) raw.emplace(std::move(*bytes), id);
  }
  t.model = std::make_unique<BpeModel>(std::move(raw), merges, options);
}

// Ids follow Hugging Face's AddedVocabulary, not the "id" fields: a content already in the vocabulary keeps
// that id, a repeated content keeps its first id (later flags win), anything else takes the next id
// after the vocabulary. For well-formed files (Llama 3, ours) the two agree.
void Loader::load_added(const Json& list, Tokenizer::Impl& t) {
  if (list.is_null()) return;
  if (!list.is_array()) fail("added_tokens", "expected an array");
  const auto model_size = static_cast<int32_t>(t.by_token.size());  // only the vocabulary so far
  std::unordered_map<std::string, int32_t> assigned;
  std::map<int32_t, AddedToken> by_id;
  std::unordered_set<std::string> special;
  int32_t max_id = -1;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string path = "added_tokens[" + std::to_string(i) + "]";
    const Json& e = list[i];
    AddedToken a;
    id_at(member(e, path, "id"), path + ".id");  // validated, but see above
    a.content = string_at(member(e, path, "content"), path + ".content");
    if (a.content.empty()) fail(path + ".content", "an added token cannot be empty");
    a.special = flag(e, path, "special", false);
    a.lstrip = flag(e, path, "lstrip", false);
    a.rstrip = flag(e, path, "rstrip", false);
    a.single_word = flag(e, path, "single_word", false);
    a.normalized = flag(e, path, "normalized", !a.special);
    if (auto it = assigned.find(a.content); it != assigned.end()) {
      a.id = it->second;
    } else if (auto v = t.by_token.find(a.content); v != t.by_token.end()) {
      a.id = v->second;
    } else {
      a.id = max_id < 0 ? model_size : (max_id >= model_size ? max_id + 1 : model_size);
    }
    assigned[a.content] = a.id;
    max_id = std::max(max_id, a.id);
    if (a.special) special.insert(a.content);
    by_id[a.id] = std::move(a);
  }
  for (auto& [id, a] : by_id) {
    a.special = special.count(a.content) > 0;
    t.added.push_back(a);
  }
  for (const AddedToken& a : t.added) {
    set_token(t, a.id, a.content);
    t.special[a.id] = a.special ? 1 : 0;
    t.by_token[a.content] = a.id;
    (a.normalized ? t.normalized_matcher : t.raw_matcher).add(&a);
  }
}

// A Replace's pattern: only a literal {"String": ...} (no supported family replaces by regex).
std::string Loader::literal_pattern(const Json& obj, const std::string& path) const {
  const Json& pattern = member(obj, path, "pattern");
  if (pattern.is_object() && pattern.contains("Regex")) {
    fail(path + ".pattern.Regex", "a regex pattern is not supported here (only {\"String\": ...})");
  }
  std::string text = string_at(member(pattern, path + ".pattern", "String"), path + ".pattern.String");
  if (text.empty()) fail(path + ".pattern.String", "an empty pattern is not supported");
  return text;
}

void Loader::load_normalizer(const Json& norm, const std::string& path, Tokenizer::Impl& t) {
  if (norm.is_null()) return;
  std::string type = type_of(norm, path);
  NormalizerStep step;
  if (type == "Sequence") {
    const Json& list = member(norm, path, "normalizers");
    if (!list.is_array()) fail(path + ".normalizers", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      load_normalizer(list[i], path + ".normalizers[" + std::to_string(i) + "]", t);
    }
    return;
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    step.kind = NormalizerStep::Kind::kUnicode;
    step.form = type == "NFC" ? UnicodeForm::kNfc : type == "NFD" ? UnicodeForm::kNfd
              : type == "NFKC" ? UnicodeForm::kNfkc : UnicodeForm::kNfkd;
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    step.pattern = literal_pattern(norm, path);
    step.content = string_at(member(norm, path, "content"), path + ".content");
  } else if (type == "Prepend") {
    step.kind = NormalizerStep::Kind::kPrepend;
    step.content = string_at(member(norm, path, "prepend"), path + ".prepend");
  } else if (type == "Strip") {
    step.kind = NormalizerStep::Kind::kStrip;
    step.left = flag(norm, path, "strip_left", true);
    step.right = flag(norm, path, "strip_right", true);
  } else {
    fail(path + ".type", "\"" + type + "\" is not supported (supported normalizers: NFC, NFD, NFKC, NFKD, Replace, "
                         "Prepend, Strip, Sequence)");
  }
  t.normalizers.push_back(std::move(step));
}

void Loader::load_pre_tokenizer(const Json& pre, const std::string& path, Tokenizer::Impl& t) {
  std::string type = type_of(pre, path);
  if (type == "Sequence") {
    const Json& list = member(pre, path, "pretokenizers");
    if (!list.is_array()) fail(path + ".pretokenizers", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      load_pre_tokenizer(list[i], path + ".pretokenizers[" + std::to_string(i) + "]", t);
    }
    return;
  }
  bool after_byte_level = !t.steps.empty() && t.steps.back().kind == PreTokenizerStep::Kind::kByteLevel;
  if (after_byte_level) fail(path, "nothing may follow the ByteLevel pre-tokenizer");
  if (type == "ByteLevel" && !t.steps.empty() && t.steps.back().kind == PreTokenizerStep::Kind::kMetaspace) {
    fail(path, "ByteLevel cannot follow Metaspace (one model is byte-level, the other SentencePiece-style)");
  }
  PreTokenizerStep step;
  if (type == "Split") {
    const Json& pattern = member(pre, path, "pattern");
    bool literal = pattern.is_object() && pattern.contains("String");
    const char* key = literal ? "String" : "Regex";
    std::string text = string_at(member(pattern, path + ".pattern", key), path + ".pattern." + key);
    std::string behavior = string_at(member(pre, path, "behavior"), path + ".behavior");
    static const std::map<std::string, SplitBehavior> kBehaviors = {
        {"Isolated", SplitBehavior::kIsolated}, {"Removed", SplitBehavior::kRemoved},
        {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
        {"MergedWithNext", SplitBehavior::kMergedWithNext}, {"Contiguous", SplitBehavior::kContiguous}};
    auto b = kBehaviors.find(behavior);
    if (b == kBehaviors.end()) {
      fail(path + ".behavior", "\"" + behavior + "\" is not supported (one of Isolated, Removed, "
                               "MergedWithPrevious, MergedWithNext, Contiguous)");
    }
    step.behavior = b->second;
    step.invert = flag(pre, path, "invert", false);
    try {
      step.regex = std::make_shared<SplitRegex>(text, literal);
    } catch (const std::invalid_argument& e) {
      fail(path + ".pattern." + key, e.what());
    }
  } else if (type == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    step.add_prefix_space = flag(pre, path, "add_prefix_space", true);
    if (flag(pre, path, "use_regex", true)) step.regex = std::make_shared<SplitRegex>(kGpt2Pattern, false);
  } else if (type == "Metaspace") {
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    step.replacement = metaspace_options(pre, path, step.prepend);
    step.split = flag(pre, path, "split", true);
  } else {
    fail(path + ".type", "\"" + type + "\" is not supported (supported pre-tokenizers: Split, ByteLevel, Metaspace, "
                         "Sequence)");
  }
  t.steps.push_back(std::move(step));
}

void Loader::load_post_processor(const Json& post, const std::string& path, Tokenizer::Impl& t) {
  if (post.is_null()) return;
  std::string type = type_of(post, path);
  if (type == "Sequence") {
    const Json& list = member(post, path, "processors");
    if (!list.is_array()) fail(path + ".processors", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      load_post_processor(list[i], path + ".processors[" + std::to_string(i) + "]", t);
    }
    return;
  }
  if (type == "ByteLevel") return;  // it only adjusts offsets, never ids
  if (type != "TemplateProcessing") {
    fail(path + ".type", "\"" + type + "\" is not supported (only TemplateProcessing, ByteLevel, Sequence)");
  }
  const Json& single = member(post, path, "single");
  const Json& specials = member(post, path, "special_tokens");
  if (!single.is_array()) fail(path + ".single", "expected an array");
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    std::string ipath = path + ".single[" + std::to_string(i) + "]";
    if (single[i].contains("Sequence")) {
      std::string seq = string_at(member(single[i]["Sequence"], ipath + ".Sequence", "id"), ipath + ".Sequence.id");
      if (seq != "A" || seen_sequence) fail(ipath, "a single-sequence template holds $A exactly once");
      seen_sequence = true;
      continue;
    }
    std::string name = string_at(member(member(single[i], ipath, "SpecialToken"), ipath + ".SpecialToken", "id"),
                                 ipath + ".SpecialToken.id");
    const Json& entry = member(specials, path + ".special_tokens", name.c_str());
    const Json& ids = member(entry, path + ".special_tokens[\"" + name + "\"]", "ids");
    if (!ids.is_array()) fail(path + ".special_tokens[\"" + name + "\"].ids", "expected an array");
    for (const Json& id : ids) {
      (seen_sequence ? t.template_suffix : t.template_prefix)
          .push_back(id_at(id, path + ".special_tokens[\"" + name + "\"].ids"));
    }
  }
  if (!seen_sequence) fail(path + ".single", "the template has no $A");
}

// Metaspace's replacement and prepend scheme (pre-tokenizer and decoder share them): `prepend_scheme`, or the
// older `add_prefix_space` (true = always).
std::string Loader::metaspace_options(const Json& obj, const std::string& path, PreTokenizerStep::Prepend& prepend) const {
  std::string replacement = string_at(member(obj, path, "replacement"), path + ".replacement");
  size_t i = 0;
  if (replacement.empty() || (next_utf8_char(replacement, i), i != replacement.size())) {
    fail(path + ".replacement", "expected one character");
  }
  auto it = obj.find("prepend_scheme");
  if (it != obj.end() && !it->is_null()) {
    std::string scheme = string_at(*it, path + ".prepend_scheme");
    if (scheme == "always") {
      prepend = PreTokenizerStep::Prepend::kAlways;
    } else if (scheme == "first") {
      prepend = PreTokenizerStep::Prepend::kFirst;
    } else if (scheme == "never") {
      prepend = PreTokenizerStep::Prepend::kNever;
    } else {
      fail(path + ".prepend_scheme", "\"" + scheme + "\" is not one of always, first, never");
    }
  } else {
    prepend = flag(obj, path, "add_prefix_space", true) ? PreTokenizerStep::Prepend::kAlways
                                                        : PreTokenizerStep::Prepend::kNever;
  }
  return replacement;
}

void Loader::load_decoder(const Json& dec, const std::string& path, Tokenizer::Impl& t) {
  std::string type = type_of(dec, path);
  DecoderStep step;
  if (type == "Sequence") {
    const Json& list = member(dec, path, "decoders");
    if (!list.is_array()) fail(path + ".decoders", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) load_decoder(list[i], path + ".decoders[" + std::to_string(i) + "]", t);
    return;
  } else if (type == "ByteLevel") {
    if (!t.byte_level) fail(path, "the ByteLevel decoder needs a ByteLevel pre-tokenizer");
    step.kind = DecoderStep::Kind::kByteLevel;
  } else if (type == "Replace") {
    step.kind = DecoderStep::Kind::kReplace;
    step.pattern = literal_pattern(dec, path);
    step.content = string_at(member(dec, path, "content"), path + ".content");
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::kStrip;
    step.content = string_at(member(dec, path, "content"), path + ".content");
    for (auto [key, slot] : {std::pair{"start", &step.start}, std::pair{"stop", &step.stop}}) {
      const Json& n = member(dec, path, key);
      if (!n.is_number_unsigned()) fail(path + "." + key, "expected a count (an integer >= 0)");
      *slot = n.get<size_t>();
    }
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    PreTokenizerStep::Prepend prepend;
    step.pattern = metaspace_options(dec, path, prepend);
    step.prepend = prepend != PreTokenizerStep::Prepend::kNever;
  } else {
    fail(path + ".type", "\"" + type + "\" is not supported (supported decoders: ByteLevel, Replace, ByteFallback, "
                         "Fuse, Strip, Metaspace, Sequence)");
  }
  t.decoders.push_back(std::move(step));
}

// Two kinds of BPE tokenizer: byte-level (the pre-tokenizer ends with ByteLevel: GPT-2, Llama 3, Qwen,
// gpt-oss) and SentencePiece-style (no ByteLevel: characters, "▁" for spaces, byte fallback: Llama 2,
// Mistral, Phi-3, Gemma).
void Loader::load(const Json& root, Tokenizer::Impl& t) {
  if (!root.is_object()) fail("(top level)", "expected a JSON object");
  t.name = name_;
  load_normalizer(root.value("normalizer", Json()), "normalizer", t);
  const Json& pre = member(root, "(top level)", "pre_tokenizer");
  if (!pre.is_null()) load_pre_tokenizer(pre, "pre_tokenizer", t);
  t.byte_level = std::any_of(t.steps.begin(), t.steps.end(),
                             [](const PreTokenizerStep& s) { return s.kind == PreTokenizerStep::Kind::kByteLevel; });
  load_model(member(root, "(top level)", "model"), t);
  load_added(root.value("added_tokens", Json()), t);
  load_post_processor(root.value("post_processor", Json()), "post_processor", t);
  const Json& dec = member(root, "(top level)", "decoder");
  if (dec.is_null() && t.byte_level) fail("decoder", "null is not supported (byte-level BPE needs the ByteLevel decoder)");
  if (!dec.is_null()) load_decoder(dec, "decoder", t);
  if (t.byte_level && (t.decoders.size() != 1 || t.decoders[0].kind != DecoderStep::Kind::kByteLevel)) {
    fail("decoder", "a byte-level BPE tokenizer needs exactly the ByteLevel decoder");
  }
  t.word_char = std::make_shared<SplitRegex>(R"(^\w)", false);
}

// Well-known names, for files whose template does not say (tokenizer_config.json overrides). Only added tokens
// count: Qwen's vocabulary has "<s>" as an ordinary BPE piece (id 128245), which is no BOS (Qwen has none).
std::optional<int32_t> find_any(const Tokenizer::Impl& t, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    for (const AddedToken& a : t.added) {
      if (a.content == n) return a.id;
    }
  }
  return std::nullopt;
}

}  // namespace

void AddedTokenMatcher::add(const AddedToken* token) {
  uint32_t node = 0;
  for (char c : token->content) {
    auto [it, fresh] = edges_.emplace(edge(node, static_cast<unsigned char>(c)), static_cast<uint32_t>(ends_.size()));
    if (fresh) ends_.push_back(nullptr);
    node = it->second;
  }
  if (!ends_[node]) ++count_;
  ends_[node] = token;  // a repeated content: the later entry wins
  const auto first = static_cast<unsigned char>(token->content[0]);
  first_byte_[first] = true;
  only_first_ = count_ == 1 || only_first_ == first ? first : -1;
}

const AddedToken* AddedTokenMatcher::find(std::string_view text, size_t from, size_t& at) const {
  if (count_ == 0) return nullptr;
  for (size_t i = from; i < text.size(); ++i) {
    if (only_first_ >= 0) {  // every token starts with the same byte (Llama 3, Qwen: '<'): memchr to it
      const void* p = std::memchr(text.data() + i, only_first_, text.size() - i);
      if (!p) return nullptr;
      i = static_cast<size_t>(static_cast<const char*>(p) - text.data());
    } else if (!first_byte_[static_cast<unsigned char>(text[i])]) {
      continue;
    }
    const AddedToken* best = nullptr;
    uint32_t node = 0;
    for (size_t k = i; k < text.size(); ++k) {
      auto it = edges_.find(edge(node, static_cast<unsigned char>(text[k])));
      if (it == edges_.end()) break;
      node = it->second;
      if (ends_[node]) best = ends_[node];
    }
    if (best) {
      at = i;
      return best;
    }
  }
  return nullptr;
}

std::unique_ptr<Tokenizer::Impl> load_tokenizer_json(const std::string& json_text, const std::string& name) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    // A syntax error, or a number too large for a double (out_of_range.406, thrown while parsing: the
    // tokenizer fuzzer found it). Drop the library's "[json.exception.parse_error.101] " prefix.
    std::string what = e.what();
    auto pos = what.find("] ");
    throw std::runtime_error(name + ": not valid JSON: " + (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
  auto t = std::make_unique<Tokenizer::Impl>();
  Loader(name).load(root, *t);
  t->bos = t->template_prefix.empty() ? find_any(*t, {"<|begin_of_text|>", "<s>", "<|startoftext|>", "<bos>"})
                                      : std::optional<int32_t>(t->template_prefix.front());
  t->eos = find_any(*t, {"<|end_of_text|>", "</s>", "<|endoftext|>", "<eos>"});
  t->pad = find_any(*t, {"<|pad|>", "<pad>", "[PAD]"});
  return t;
}

}  // namespace air::train
