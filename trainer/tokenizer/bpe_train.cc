// Byte-level BPE training (see bpe_train.h). Pair counts are kept incrementally: a merge only revisits
// the words that hold the merged pair, and a lazy max-heap picks the next pair.
#include "trainer/tokenizer/bpe_train.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "trainer/tokenizer/byte_level.h"
#include "trainer/tokenizer/regex.h"

namespace air::train {
namespace {

using Pair = std::pair<int32_t, int32_t>;

uint64_t key_of(Pair p) { return (static_cast<uint64_t>(p.first) << 32) | static_cast<uint32_t>(p.second); }
Pair pair_of(uint64_t k) { return {static_cast<int32_t>(k >> 32), static_cast<int32_t>(k & 0xffffffffu)}; }

struct HeapEntry {
  int64_t count;
  uint64_t pair;
  // Max-heap on count; on equal counts the smaller pair (by left id, then right id) comes first.
  bool operator<(const HeapEntry& o) const { return count != o.count ? count < o.count : pair > o.pair; }
};

struct Word {
  std::vector<int32_t> symbols;
  int64_t freq;
};

// Replaces every non-overlapping (a, b), left to right, by `merged`.
std::vector<int32_t> merge_word(const std::vector<int32_t>& s, Pair p, int32_t merged) {
  std::vector<int32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (i + 1 < s.size() && s[i] == p.first && s[i + 1] == p.second) {
      out.push_back(merged);
      ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

struct BpeTrainer::Counts {
  std::unordered_map<std::string, int64_t> words;
  int64_t total = 0;
  SplitRegex regex{kLlama3Pattern, false};
};

BpeTrainer::BpeTrainer(BpeTrainOptions options) : options_(std::move(options)), counts_(std::make_shared<Counts>()) {
  if (options_.special_tokens.empty()) throw std::invalid_argument("at least one special token (BOS) is needed");
  if (options_.vocab_size < 256 + static_cast<int32_t>(options_.special_tokens.size())) {
    throw std::invalid_argument("vocab_size must leave room for the 256 byte tokens and the special tokens");
  }
}

void BpeTrainer::add_text(std::string_view text) {
  // Cut out special tokens so their spelling does not shape the merges.
  std::vector<std::string_view> parts{text};
  for (const std::string& special : options_.special_tokens) {
    std::vector<std::string_view> next;
    for (std::string_view p : parts) {
      size_t at;
      while ((at = p.find(special)) != std::string_view::npos) {
        next.push_back(p.substr(0, at));
        p.remove_prefix(at + special.size());
      }
      next.push_back(p);
    }
    parts.swap(next);
  }
  std::vector<std::string_view> pieces;
  for (std::string_view p : parts) {
    pieces.clear();
    counts_->regex.split_isolated(p, pieces);
    for (std::string_view w : pieces) {
      ++counts_->words[std::string(w)];
      ++counts_->total;
    }
  }
}

std::vector<std::pair<std::string, int64_t>> BpeTrainer::word_list() const {
  std::vector<std::pair<std::string, int64_t>> list(counts_->words.begin(), counts_->words.end());
  std::sort(list.begin(), list.end());
  return list;
}

BpeTrainResult BpeTrainer::train() const {
  BpeTrainResult r;
  r.words = counts_->total;
  for (int b = 0; b < 256; ++b) r.tokens.emplace_back(1, static_cast<char>(b));
  std::unordered_map<std::string, int32_t> ids;
  for (int b = 0; b < 256; ++b) ids[r.tokens[b]] = b;

  std::vector<Word> words;
  for (auto& [text, freq] : word_list()) {
    Word w{{}, freq};
    for (char c : text) w.symbols.push_back(static_cast<unsigned char>(c));
    words.push_back(std::move(w));
  }
  r.distinct_words = static_cast<int64_t>(words.size());

  std::unordered_map<uint64_t, int64_t> count;
  std::unordered_map<uint64_t, std::vector<int32_t>> where;  // pair -> words that held it (may be stale)
  auto add_pairs = [&](int32_t wi, int64_t sign, std::vector<uint64_t>* touched) {
    const Word& w = words[wi];
    for (size_t i = 0; i + 1 < w.symbols.size(); ++i) {
      uint64_t k = key_of({w.symbols[i], w.symbols[i + 1]});
      count[k] += sign * w.freq;
      if (sign > 0) where[k].push_back(wi);
      if (touched) touched->push_back(k);
    }
  };
  for (int32_t wi = 0; wi < static_cast<int32_t>(words.size()); ++wi) add_pairs(wi, +1, nullptr);
  std::priority_queue<HeapEntry> heap;
  for (auto& [k, c] : count) heap.push({c, k});

  const auto learned_limit = static_cast<size_t>(options_.vocab_size) - options_.special_tokens.size();
  std::vector<int32_t> last_visit(words.size(), -1);
  while (r.tokens.size() < learned_limit && !heap.empty()) {
    HeapEntry top = heap.top();
    heap.pop();
    auto it = count.find(top.pair);
    if (it == count.end() || it->second != top.count) continue;  // stale entry
    if (top.count < options_.min_frequency) break;
    Pair p = pair_of(top.pair);
    std::string merged_bytes = r.tokens[p.first] + r.tokens[p.second];
    auto [id_it, fresh] = ids.emplace(merged_bytes, static_cast<int32_t>(r.tokens.size()));
    if (fresh) r.tokens.push_back(merged_bytes);
    int32_t merged = id_it->second;
    auto merge_index = static_cast<int32_t>(r.merges.size());
    r.merges.push_back(p);

    std::vector<uint64_t> touched;
    std::vector<int32_t> holders = std::move(where[top.pair]);
    where.erase(top.pair);
    for (int32_t wi : holders) {
      if (last_visit[wi] == merge_index) continue;
      last_visit[wi] = merge_index;
      auto next = merge_word(words[wi].symbols, p, merged);
      if (next.size() == words[wi].symbols.size()) continue;
      add_pairs(wi, -1, &touched);
      words[wi].symbols = std::move(next);
      add_pairs(wi, +1, &touched);
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (uint64_t k : touched) {
      int64_t c = count[k];
      if (c > 0) {
        heap.push({c, k});
      } else {
        count.erase(k);
      }
    }
  }
  return r;
}

std::string BpeTrainer::to_tokenizer_json(const BpeTrainResult& result) const {
  using Json = nlohmann::ordered_json;
  const std::string& bos = options_.special_tokens.front();
  Json added = Json::array();
  auto first_special = static_cast<int32_t>(result.tokens.size());
  for (size_t i = 0; i < options_.special_tokens.size(); ++i) {
    added.push_back({{"id", first_special + static_cast<int32_t>(i)}, {"content", options_.special_tokens[i]},
                     {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                     {"special", true}});
  }
  Json vocab = Json::object();
  for (size_t id = 0; id < result.tokens.size(); ++id) vocab[bytes_to_byte_level(result.tokens[id])] = id;
  Json merges = Json::array();
  for (auto [a, b] : result.merges) {
    merges.push_back(bytes_to_byte_level(result.tokens[a]) + " " + bytes_to_byte_level(result.tokens[b]));
  }
  Json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  Json root = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
          byte_level}}}},
      {"post_processor",
       {{"type", "Sequence"},
        {"processors",
         {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}},
          {{"type", "TemplateProcessing"},
           {"single", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
           {"pair",
            {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
             {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
           {"special_tokens",
            {{bos, {{"id", bos}, {"ids", {first_special}}, {"tokens", {bos}}}}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", true},
        {"vocab", vocab}, {"merges", merges}}}};
  return root.dump(2) + "\n";
}

std::string BpeTrainer::to_tokenizer_config_json() const {
  nlohmann::ordered_json config = {
      {"add_bos_token", true},
      {"add_eos_token", false},
      {"bos_token", options_.special_tokens.front()},
      {"eos_token", options_.special_tokens.size() > 1 ? options_.special_tokens[1] : options_.special_tokens[0]},
      {"pad_token", options_.special_tokens.size() > 2 ? nlohmann::ordered_json(options_.special_tokens[2]) : nullptr},
      {"clean_up_tokenization_spaces", false},
      {"model_input_names", nlohmann::ordered_json::array({"input_ids", "attention_mask"})},
      {"model_max_length", 131072},
      {"tokenizer_class", "PreTrainedTokenizerFast"}};
  return config.dump(2) + "\n";
}

}  // namespace air::train
