// Tokenized examples stored flat, as the data cache keeps them (trainer/data/cache.h): every example's ids
// (int32) back to back in ids.bin, one trained flag per token (uint8) in mask.bin, one index row per example
// in index.bin. A set is either owned (built in memory, cache off) or memory-mapped read-only from a cache
// entry: the tokens then stay in the page cache, shared by every rank of the node and never copied, and a
// rank's own memory holds only the loader's row order (a few bytes per example). No libtorch (air_data).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/data/example.h"

namespace air::train {

// One row of index.bin (the file layout: 32 bytes, host byte order).
struct ExampleIndexRow {
  int64_t offset = 0, length = 0, prompt_len = 0, has_mask = 0;
};

// A read-only view of one example of a set (valid while the set, or a set sharing its storage, lives).
struct ExampleRef {
  const int32_t* ids = nullptr;
  const uint8_t* mask = nullptr;  // null: trained from prompt_len on (Alpaca), as Example::trained
  int64_t size = 0, prompt_len = 0;

  bool trained(int64_t t) const { return mask ? mask[t] != 0 : t >= prompt_len; }
  // Targets among the first `len` tokens (token 0 is never one), as Example::targets_within.
  int64_t targets_within(int64_t len) const;
};

class ExampleSet {
 public:
  ExampleSet() = default;
  explicit ExampleSet(const std::vector<Example>& examples);  // an owned, packed copy
  // Maps <dir>/{index,ids,mask}.bin read-only. Throws air::Error naming the entry when a file is missing or
  // the index does not fit the files (a damaged entry).
  static ExampleSet map_entry(const std::string& dir);

  // The examples of `parts` one after the other (a mixture of datasets), sharing their storage.
  static ExampleSet concat(const std::vector<ExampleSet>& parts);

  size_t size() const { return pick_ ? pick_->size() : count_; }
  bool empty() const { return size() == 0; }
  ExampleRef operator[](size_t i) const;
  int64_t length(size_t i) const {
    const auto [p, r] = locate(i);
    return p->index[r].length;
  }
  // The examples at `indices`, in that order, sharing this set's storage (the eval split, a mixture).
  ExampleSet select(std::vector<uint32_t> indices) const;
  Example copy(size_t i) const;  // an owned copy of one example
  bool mapped() const;

 private:
  struct Storage;
  struct Part {  // one flat store (owned or mapped): examples [first, first + count) of the set's whole
    std::shared_ptr<const Storage> storage;
    const ExampleIndexRow* index = nullptr;
    const int32_t* ids = nullptr;
    const uint8_t* mask = nullptr;
    size_t first = 0, count = 0;
  };
  std::pair<const Part*, size_t> locate(size_t i) const {
    const size_t k = pick_ ? (*pick_)[i] : i;
    const Part* p = parts_.data();
    while (k >= p->first + p->count) ++p;  // a handful of parts at most (one per dataset)
    return {p, k - p->first};
  }
  std::vector<Part> parts_;
  size_t count_ = 0;
  std::shared_ptr<const std::vector<uint32_t>> pick_;  // null: every example in order
};

// Appends examples to <dir>/{index,ids,mask}.bin as they come (nothing is held back in memory).
class ExampleSetWriter {
 public:
  explicit ExampleSetWriter(const std::string& dir);
  ~ExampleSetWriter();
  void add(const Example& e);
  void add(const ExampleRef& e);
  // Flushes and closes; throws air::Error on a write error (disk full). Nothing is complete before this.
  void finish();
  int64_t examples() const { return examples_; }

 private:
  struct Files;
  std::unique_ptr<Files> f_;
  int64_t examples_ = 0, tokens_ = 0;
};

}  // namespace air::train
