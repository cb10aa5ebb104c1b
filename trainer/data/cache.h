// The tokenized-data cache: the examples of a dataset, tokenized once and kept on disk under a key made of
// the data files' content, the tokenizer file, the chat template (text, special tokens, pinned date) and
// every setting that changes tokens (format, train_on, bad_records, max_examples, max_seq_len, BOS/EOS).
//
// Layout: <dir>/<key>/{index.bin, ids.bin, mask.bin, stats.json}. An entry is written into
// <dir>/<key>.tmp-<pid> and renamed into place when complete, so a killed tokenization leaves no half entry
// (its temporary folder is removed by the next writer). The ranks of a node share it: each takes an
// exclusive lock on <dir>/<key>.lock; the first finds no entry and writes it, the others wait on the lock and
// then read. Every rank - the writer too, once its entry is in place - reads the examples straight from a
// read-only mapping of the entry (trainer/data/example_set.h): the tokens sit once in the node's page cache,
// not in each rank's memory. A second start tokenizes nothing and says so. No libtorch (library air_data).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "trainer/data/dataset.h"
#include "trainer/data/example_set.h"

namespace air::train {

struct CacheSettings {
  std::string dir;             // empty: no cache
  std::string tokenizer_path;  // its content is part of the key
};

// `dir_setting` (data_cache_dir) when set, else $AIR_DATA_CACHE, else ~/.cache/air/data; "off" disables it.
CacheSettings cache_settings(const std::string& dir_setting, const std::string& tokenizer_path, int64_t rank);

// The key of these inputs (32 hex digits).
std::string cache_key(const std::vector<std::string>& files, const DataSettings& settings, const ExampleBuilder& builder,
                      const CacheSettings& cache);

struct CachedData {
  ExampleSet examples;  // mapped from the entry; owned when the cache is off
  DataStats stats;
};

// load_examples() through the cache: a hit maps the entry, a miss tokenizes into it (example by example,
// nothing held back) and then maps it.
CachedData load_examples_cached(const std::vector<std::string>& files, const DataSettings& settings,
                                const ExampleBuilder& builder, const CacheSettings& cache, std::ostream& log);

// The stats.json of an entry (exposed for the tests and the memory bench).
void write_cache_stats(const std::string& dir, const DataStats& stats);
DataStats read_cache_stats(const std::string& dir);

}  // namespace air::train
