// Byte-level BPE merging (see bpe_model.h). Merges are applied lowest rank first, leftmost first on ties,
// through a heap over a linked list of symbols: O(n log n) even for very long pieces.
#include "trainer/tokenizer/bpe_model.h"

#include <algorithm>
#include <mutex>
#include <queue>

namespace air::train {
namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool alive;
};

struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t result;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

constexpr size_t kMaxCachedPiece = 256;

}  // namespace

BpeModel::BpeModel(std::unordered_map<std::string, int32_t> vocab, const std::vector<BpeMerge>& merges,
                   BpeModelOptions options)
    : options_(options) {
  vocab_.reserve(vocab.size());
  for (auto& [k, v] : vocab) vocab_.emplace(k, v);
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(std::string_view(reinterpret_cast<const char*>(&b), 1));
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    // A repeated pair keeps its last rank, as in Hugging Face's HashMap collection.
    merges_[pair_key(merges[rank].left, merges[rank].right)] = {static_cast<int32_t>(rank),
                                                                merges[rank].result};
  }
}

BpeModel::BpeModel(BpeModel&& o) noexcept
    : vocab_(std::move(o.vocab_)), merges_(std::move(o.merges_)), options_(o.options_),
      cache_(std::move(o.cache_)) {
  std::copy(std::begin(o.byte_ids_), std::end(o.byte_ids_), byte_ids_);
}

void BpeModel::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    auto it = vocab_.find(piece);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  bool cacheable = piece.size() <= kMaxCachedPiece && options_.cache_capacity > 0;
  if (cacheable) {
    std::shared_lock lock(cache_mutex_);
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t first = out.size();
  merge(piece, out);
  if (cacheable) {
    std::unique_lock lock(cache_mutex_);
    if (cache_.size() < options_.cache_capacity) {
      cache_.try_emplace(std::string(piece), out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
    }
  }
}

void BpeModel::merge(std::string_view piece, std::vector<int32_t>& out) const {
  std::vector<Symbol> syms;
  syms.reserve(piece.size());
  bool pending_unk = false;  // an unk symbol is open and may absorb the next unknown byte (fuse_unk)
  for (char c : piece) {
    int32_t id = byte_ids_[static_cast<unsigned char>(c)];
    if (id < 0) {
      if (!options_.unk_id) continue;
      if (pending_unk && options_.fuse_unk) continue;
      id = *options_.unk_id;
      pending_unk = true;
    } else {
      pending_unk = false;
    }
    auto n = static_cast<int32_t>(syms.size());
    syms.push_back({id, n - 1, n + 1, true});
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t pos) {
    int32_t next = syms[pos].next;
    if (next < 0) return;
    auto it = merges_.find(pair_key(syms[pos].id, syms[next].id));
    if (it != merges_.end()) heap.push({it->second.first, pos, it->second.second});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) consider(i);

  while (!heap.empty()) {
    Candidate top = heap.top();
    heap.pop();
    Symbol& left = syms[top.pos];
    if (!left.alive || left.next < 0) continue;
    // The pair may have changed since this candidate was queued; only a still-valid merge applies.
    auto it = merges_.find(pair_key(left.id, syms[left.next].id));
    if (it == merges_.end() || it->second.second != top.result || it->second.first != top.rank) continue;
    Symbol& right = syms[left.next];
    right.alive = false;
    left.id = top.result;
    left.next = right.next;
    if (left.next >= 0) syms[left.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (const Symbol& s : syms) {
    if (s.alive) out.push_back(s.id);
  }
}

}  // namespace air::train
