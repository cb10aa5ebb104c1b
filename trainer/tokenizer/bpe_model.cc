// BPE merging (see bpe_model.h). Merges are applied lowest rank first, leftmost first on ties,
// through a heap over a linked list of symbols: O(n log n) even for very long pieces.
#include "trainer/tokenizer/bpe_model.h"

#include <algorithm>
#include <atomic>
#include <queue>

namespace air::train {
namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t result;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

constexpr size_t kMaxCachedPiece = 256;

// The cache of recent pieces: one per thread, direct-mapped by the piece's hash, so a lookup takes no lock
// and touches one slot (a shared map under a reader lock cost more than the merging it saved). A slot
// belongs to one model (`model`: BpeModel ids are never reused, unlike addresses).
struct CacheSlot {
  uint64_t model = 0;
  size_t hash = 0;
  std::string piece;
  std::vector<int32_t> ids;
  std::vector<uint32_t> lengths;  // bytes of the piece per token
};
constexpr size_t kCacheSlots = 1 << 13;
std::atomic<uint64_t> next_model_id{1};


// Spreads a pair key over the table (the high bits of a multiplicative hash).
uint64_t mix(uint64_t key) {
  key *= 0x9E3779B97F4A7C15ull;
  return key ^ (key >> 29);
}
constexpr std::string_view kMetaspace = "\u2581";

// Length of the UTF-8 character starting with byte `c` at i (1 for a malformed byte).
size_t utf8_length(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

}  // namespace

struct BpeModel::Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  uint32_t length;  // bytes of the piece it covers
  bool alive;
};

BpeModel::BpeModel(std::unordered_map<std::string, int32_t> vocab, const std::vector<BpeMerge>& merges,
                   BpeModelOptions options)
    : options_(options), id_(next_model_id++) {
  vocab_.reserve(vocab.size());
  for (auto& [k, v] : vocab) vocab_.emplace(k, v);
  static const char* const kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    char c = static_cast<char>(b);
    auto it = vocab_.find(std::string_view(&c, 1));
    byte_ids_[b] = it == vocab_.end() || (!options_.byte_level && b >= 0x80) ? -1 : it->second;
    std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
    auto fb = vocab_.find(name);
    fallback_ids_[b] = fb == vocab_.end() ? -1 : fb->second;
  }
  // Character models: which characters some token joins to a following "▁". Before every other "▁" (after a
  // character that is not "▁" itself), no merge can ever cross, so pieces are merged word by word there.
  if (!options_.byte_level && !options_.ignore_merges) {
    split_words_ = true;
    for (const auto& [token, id] : vocab_) {
      std::string_view t = token;
      for (size_t at = t.find(kMetaspace, 1); at != std::string_view::npos; at = t.find(kMetaspace, at + 3)) {
        size_t prev = at - 1;
        while (prev > 0 && (static_cast<unsigned char>(t[prev]) & 0xC0) == 0x80) --prev;
        if (t.substr(prev, at - prev) != kMetaspace) joins_metaspace_.emplace(t.substr(prev, at - prev));
      }
    }
  }
  size_t slots = 16;
  while (slots < 2 * merges.size()) slots *= 2;
  merges_.assign(slots, MergeSlot{});
  merge_mask_ = slots - 1;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    // A repeated pair keeps its last rank, as in Hugging Face's HashMap collection.
    uint64_t key = pair_key(merges[rank].left, merges[rank].right);
    for (uint64_t i = mix(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
      if (merges_[i].key == kEmptyKey || merges_[i].key == key) {
        merges_[i] = {key, static_cast<int32_t>(rank), merges[rank].result};
        break;
      }
    }
  }
}

BpeModel::BpeModel(BpeModel&& o) noexcept
    : vocab_(std::move(o.vocab_)), merges_(std::move(o.merges_)), merge_mask_(o.merge_mask_),
      split_words_(o.split_words_),
      joins_metaspace_(std::move(o.joins_metaspace_)), options_(o.options_), id_(o.id_) {
  std::copy(std::begin(o.byte_ids_), std::end(o.byte_ids_), byte_ids_);
  std::copy(std::begin(o.fallback_ids_), std::end(o.fallback_ids_), fallback_ids_);
}

const BpeModel::MergeSlot* BpeModel::find_merge(uint64_t key) const {
  for (uint64_t i = mix(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    const MergeSlot& s = merges_[i];
    if (s.key == key) return &s;
    if (s.key == kEmptyKey) return nullptr;
  }
}

void BpeModel::encode(std::string_view piece, std::vector<int32_t>& out, std::vector<uint32_t>* lengths) const {
  if (piece.empty()) return;
  // ignore_merges (a piece that is a vocabulary entry is that token) is decided in encode_word, after the
  // cache: the vocabulary is a large table whose lookups miss the CPU caches, the cache of recent pieces is not.
  if (!split_words_) return encode_word(piece, out, lengths);
  // Cut before each "▁" that no token can join to the character in front of it (see bpe_model.h).
  size_t start = 0;
  for (size_t at = piece.find(kMetaspace, 1); at != std::string_view::npos; at = piece.find(kMetaspace, at + 3)) {
    size_t prev = at - 1;
    while (prev > start && (static_cast<unsigned char>(piece[prev]) & 0xC0) == 0x80) --prev;
    std::string_view before = piece.substr(prev, at - prev);
    if (at == start || before == kMetaspace || joins_metaspace_.count(before)) continue;
    // A character outside the vocabulary becomes <0xXX> or <unk> symbols, whose text is not its own: no cut.
    bool known = before.size() == 1 ? byte_ids_[static_cast<unsigned char>(before[0])] >= 0 : vocab_.count(before) > 0;
    if (!known) continue;
    encode_word(piece.substr(start, at - start), out, lengths);
    start = at;
  }
  encode_word(piece.substr(start), out, lengths);
}

void BpeModel::encode_word(std::string_view piece, std::vector<int32_t>& out, std::vector<uint32_t>* lengths) const {
  const bool cacheable = piece.size() <= kMaxCachedPiece && options_.cache_capacity > 0;
  if (!cacheable) return whole_or_merge(piece, out, lengths);
  thread_local std::vector<CacheSlot> cache(kCacheSlots);
  const size_t hash = StringHash{}(piece);
  CacheSlot& slot = cache[(hash ^ (hash >> 17)) & (kCacheSlots - 1)];
  if (slot.model == id_ && slot.hash == hash && slot.piece == piece) {
    out.insert(out.end(), slot.ids.begin(), slot.ids.end());
    if (lengths) lengths->insert(lengths->end(), slot.lengths.begin(), slot.lengths.end());
    return;
  }
  const size_t first = out.size();
  slot.lengths.clear();
  whole_or_merge(piece, out, &slot.lengths);
  slot.model = id_;
  slot.hash = hash;
  slot.piece.assign(piece);
  slot.ids.assign(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  if (lengths) lengths->insert(lengths->end(), slot.lengths.begin(), slot.lengths.end());
}

void BpeModel::whole_or_merge(std::string_view piece, std::vector<int32_t>& out, std::vector<uint32_t>* lengths) const {
  if (options_.ignore_merges) {
    auto it = vocab_.find(piece);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      if (lengths) lengths->push_back(static_cast<uint32_t>(piece.size()));
      return;
    }
  }
  merge(piece, out, lengths);
}

// The piece's symbols before any merge: its bytes (byte-level) or characters, with the unknown ones as
// byte-fallback tokens or the unknown token (consecutive ones fused into one when fuse_unk), as Hugging
// Face's BPE::merge_word does; without an unknown token they are dropped.
void BpeModel::initial_symbols(std::string_view piece, std::vector<Symbol>& syms) const {
  bool pending_unk = false;  // the last symbol is an unk that may absorb the next unknown one (fuse_unk)
  auto add = [&](int32_t id, size_t len) {
    auto n = static_cast<int32_t>(syms.size());
    syms.push_back({id, n - 1, n + 1, static_cast<uint32_t>(len), true});
  };
  auto unknown = [&](size_t len) {
    if (!options_.unk_id) return;
    if (pending_unk && options_.fuse_unk) {
      syms.back().length += static_cast<uint32_t>(len);
      return;
    }
    add(*options_.unk_id, len);
    pending_unk = true;
  };
  if (options_.byte_level) {
    for (char c : piece) {
      int32_t id = byte_ids_[static_cast<unsigned char>(c)];
      if (id < 0) {
        unknown(1);
      } else {
        add(id, 1);
        pending_unk = false;
      }
    }
    return;
  }
  for (size_t i = 0; i < piece.size();) {
    size_t len = utf8_length(piece, i);
    auto first = static_cast<unsigned char>(piece[i]);
    int32_t id = -1;
    if (first < 0x80) {
      id = byte_ids_[first];
    } else if (auto it = vocab_.find(piece.substr(i, len)); it != vocab_.end()) {
      id = it->second;
    }
    if (id >= 0) {
      add(id, len);
      pending_unk = false;
    } else if (options_.byte_fallback &&
               std::all_of(piece.begin() + static_cast<std::ptrdiff_t>(i),
                           piece.begin() + static_cast<std::ptrdiff_t>(i + len),
                           [&](char c) { return fallback_ids_[static_cast<unsigned char>(c)] >= 0; })) {
      for (size_t k = i; k < i + len; ++k) add(fallback_ids_[static_cast<unsigned char>(piece[k])], 1);
    } else {
      unknown(len);
    }
    i += len;
  }
}

void BpeModel::merge(std::string_view piece, std::vector<int32_t>& out, std::vector<uint32_t>* lengths) const {
  std::vector<Symbol> syms;
  syms.reserve(piece.size());
  initial_symbols(piece, syms);
  if (syms.empty()) return;
  syms.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t pos) {
    int32_t next = syms[pos].next;
    if (next < 0) return;
    if (const MergeSlot* m = find_merge(pair_key(syms[pos].id, syms[next].id))) heap.push({m->rank, pos, m->result});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) consider(i);

  while (!heap.empty()) {
    Candidate top = heap.top();
    heap.pop();
    Symbol& left = syms[top.pos];
    if (!left.alive || left.next < 0) continue;
    // The pair may have changed since this candidate was queued; only a still-valid merge applies.
    const MergeSlot* m = find_merge(pair_key(left.id, syms[left.next].id));
    if (!m || m->result != top.result || m->rank != top.rank) continue;
    Symbol& right = syms[left.next];
    right.alive = false;
    left.id = top.result;
    left.length += right.length;
    left.next = right.next;
    if (left.next >= 0) syms[left.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (const Symbol& s : syms) {
    if (!s.alive) continue;
    out.push_back(s.id);
    if (lengths) lengths->push_back(s.length);
  }
}

}  // namespace air::train
