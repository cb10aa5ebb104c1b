// The tokenized-data cache (cache.h): key, entry files, the node-wide lock and the atomic rename.
#include "trainer/data/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

constexpr uint32_t kVersion = 1;  // bump when the entry layout or the tokenization rules change

// A 128-bit FNV-1a style hash in two lanes, over 8-byte words (fast enough for GBs; not for adversaries).
class Hasher {
 public:
  void bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      mix(w);
    }
    uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    mix(w ^ (static_cast<uint64_t>(n - i) << 56));
  }
  void str(const std::string& s) {
    const uint64_t n = s.size();
    bytes(&n, sizeof n);
    bytes(s.data(), s.size());
  }
  void file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + path);
    std::vector<char> buf(1 << 20);
    uint64_t total = 0;
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      const size_t got = static_cast<size_t>(in.gcount());
      bytes(buf.data(), got);
      total += got;
    }
    bytes(&total, sizeof total);
  }
  std::string hex() const {
    char out[33];
    std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(a_), static_cast<unsigned long long>(b_));
    return out;
  }

 private:
  void mix(uint64_t w) {
    a_ = (a_ ^ w) * 0x100000001b3ull;
    a_ ^= a_ >> 29;
    b_ = (b_ ^ (w + 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    b_ ^= b_ >> 32;
  }
  uint64_t a_ = 0xcbf29ce484222325ull, b_ = 0x84222325cbf29ce4ull;
};

// flock on a file: held until destruction (the kernel drops it if the process dies).
class FileLock {
 public:
  explicit FileLock(const fs::path& p) : fd_(::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw Error("cannot create lock " + p.string(), "set data_cache_dir to a writable folder, or off");
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) throw Error("cannot lock " + p.string());
  }
  ~FileLock() { ::close(fd_); }

 private:
  int fd_;
};

}  // namespace

CacheSettings cache_settings(const std::string& dir_setting, const std::string& tokenizer_path, int64_t) {
  CacheSettings c;
  c.tokenizer_path = tokenizer_path;
  std::string dir = dir_setting;
  if (dir.empty())
    if (const char* e = std::getenv("AIR_DATA_CACHE"); e && *e) dir = e;
  if (dir.empty())
    if (const char* h = std::getenv("HOME"); h && *h) dir = (fs::path(h) / ".cache" / "air" / "data").string();
  c.dir = dir == "off" ? "" : dir;
  return c;
}

std::string cache_key(const std::vector<std::string>& files, const DataSettings& s, const ExampleBuilder& b,
                      const CacheSettings& cache) {
  Hasher h;
  h.bytes(&kVersion, sizeof kVersion);
  for (const auto& f : files) {
    h.str(fs::path(f).filename().string());
    h.file(f);
  }
  if (!cache.tokenizer_path.empty()) h.file(cache.tokenizer_path);
  if (const ChatTemplate* t = b.chat_template()) {
    h.str(t->source());
    h.str(t->special_tokens().dump());
    h.str(t->date_pin());
  }
  const TextEncoder& e = b.encoder();
  const int64_t nums[] = {static_cast<int64_t>(s.format), static_cast<int64_t>(b.train_on()), s.skip_bad, s.max_examples,
                          s.max_seq_len, e.bos ? *e.bos : -1, e.eos};
  h.bytes(nums, sizeof nums);
  return h.hex();
}

void write_cache_stats(const std::string& dir, const DataStats& s) {
  nlohmann::json j = {{"records", s.records}, {"examples", s.examples}, {"skipped_bad", s.skipped_bad},
                      {"skipped_untrained", s.skipped_untrained}, {"tokens", s.tokens}, {"trained_tokens", s.trained_tokens},
                      {"truncated", s.truncated}, {"formats", s.formats}, {"skipped_examples", s.skipped_examples}};
  std::ofstream out(fs::path(dir) / "stats.json");
  out << j.dump(1) << "\n";
  if (!out.flush()) throw Error("cannot write " + (fs::path(dir) / "stats.json").string() + " (disk full?)");
}

DataStats read_cache_stats(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "stats.json");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error("cache entry " + dir + " is damaged (stats.json)", "delete the entry's folder; the next start writes it again");
  DataStats s;
  s.records = j.value("records", 0);
  s.examples = j.value("examples", 0);
  s.skipped_bad = j.value("skipped_bad", 0);
  s.skipped_untrained = j.value("skipped_untrained", 0);
  s.tokens = j.value("tokens", 0);
  s.trained_tokens = j.value("trained_tokens", 0);
  s.truncated = j.value("truncated", 0);
  s.formats = j.value("formats", std::map<std::string, int64_t>{});
  s.skipped_examples = j.value("skipped_examples", std::vector<std::string>{});
  return s;
}

CachedData load_examples_cached(const std::vector<std::string>& files, const DataSettings& settings,
                                const ExampleBuilder& builder, const CacheSettings& cache, std::ostream& log) {
  if (cache.dir.empty()) {
    LoadedData d = load_examples(files, settings, builder, log);
    return {ExampleSet(d.examples), d.stats};
  }
  std::error_code ec;
  fs::create_directories(cache.dir, ec);
  if (ec) throw Error("cannot create the data cache " + cache.dir + ": " + ec.message(), "set data_cache_dir to a writable folder, or off");
  const std::string key = cache_key(files, settings, builder, cache);
  const fs::path entry = fs::path(cache.dir) / key;
  FileLock lock(fs::path(cache.dir) / (key + ".lock"));
  if (fs::is_directory(entry, ec)) {
    auto t0 = std::chrono::steady_clock::now();
    CachedData d{ExampleSet::map_entry(entry.string()), read_cache_stats(entry.string())};
    log << "data cache: hit " << entry.string() << " (" << d.examples.size() << " examples, mapped, nothing tokenized, "
        << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s)\n";
    return d;
  }
  // Leftovers of a killed writer: never an entry, removed here.
  for (const auto& it : fs::directory_iterator(cache.dir, ec))
    if (it.path().filename().string().rfind(key + ".tmp-", 0) == 0) fs::remove_all(it.path(), ec);
  auto t0 = std::chrono::steady_clock::now();
  const fs::path tmp = fs::path(cache.dir) / (key + ".tmp-" + std::to_string(::getpid()));
  DataStats stats;
  try {
    ExampleSetWriter writer(tmp.string());
    load_examples_into(files, settings, builder, log, [&](Example&& e) { writer.add(e); }, stats);
    writer.finish();
    write_cache_stats(tmp.string(), stats);
  } catch (...) {  // bad records, a full disk: no entry, and no leftover
    fs::remove_all(tmp, ec);
    throw;
  }
  // Fault injection for the tests: die with the entry written but not yet in place.
  if (const char* fault = std::getenv("AIR_DATA_CACHE_FAULT"); fault && std::string(fault) == "before_rename") std::_Exit(3);
  fs::rename(tmp, entry, ec);
  if (ec) throw Error("cannot move the data cache entry into place " + entry.string() + ": " + ec.message());
  log << "data cache: miss, tokenized " << stats.records << " records in "
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s into " << entry.string() << "\n";
  return {ExampleSet::map_entry(entry.string()), stats};
}

}  // namespace air::train
