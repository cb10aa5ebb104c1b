// The tokenized-data cache (cache.h): key, entry files, the node-wide lock and the atomic rename.
#include "trainer/data/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
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

struct IndexRow {
  int64_t offset, length, prompt_len, has_mask;
};

template <typename T>
void write_vec(const fs::path& p, const std::vector<T>& v) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  if (!out) throw Error("cannot write " + p.string() + " (disk full?)");
}

// A read-only mapping of a whole file.
class Mapped {
 public:
  explicit Mapped(const fs::path& p) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open cache file " + p.string());
    struct stat st {};
    ::fstat(fd, &st);
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (data_ == MAP_FAILED) throw Error("cannot map cache file " + p.string());
  }
  ~Mapped() {
    if (data_ && data_ != MAP_FAILED) ::munmap(data_, size_);
  }
  template <typename T>
  const T* as() const { return static_cast<const T*>(data_); }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
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

void write_cache_entry(const std::string& dir, const LoadedData& data) {
  fs::create_directories(dir);
  std::vector<IndexRow> index;
  std::vector<int32_t> ids;
  std::vector<uint8_t> mask;
  index.reserve(data.examples.size());
  for (const auto& e : data.examples) {
    index.push_back({static_cast<int64_t>(ids.size()), static_cast<int64_t>(e.ids.size()), e.prompt_len, !e.mask.empty()});
    ids.insert(ids.end(), e.ids.begin(), e.ids.end());
    if (e.mask.empty()) mask.resize(ids.size(), 0);
    else mask.insert(mask.end(), e.mask.begin(), e.mask.end());
  }
  write_vec(fs::path(dir) / "index.bin", index);
  write_vec(fs::path(dir) / "ids.bin", ids);
  write_vec(fs::path(dir) / "mask.bin", mask);
  const DataStats& s = data.stats;
  nlohmann::json j = {{"records", s.records}, {"examples", s.examples}, {"skipped_bad", s.skipped_bad},
                      {"skipped_untrained", s.skipped_untrained}, {"tokens", s.tokens}, {"trained_tokens", s.trained_tokens},
                      {"truncated", s.truncated}, {"formats", s.formats}, {"skipped_examples", s.skipped_examples}};
  std::ofstream(fs::path(dir) / "stats.json") << j.dump(1) << "\n";
}

LoadedData read_cache_entry(const std::string& dir) {
  LoadedData out;
  Mapped index(fs::path(dir) / "index.bin"), ids(fs::path(dir) / "ids.bin"), mask(fs::path(dir) / "mask.bin");
  const size_t n = index.size() / sizeof(IndexRow), tokens = ids.size() / sizeof(int32_t);
  if (mask.size() != tokens) throw Error("cache entry " + dir + " is damaged (mask and ids differ in length)", "delete it");
  out.examples.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const IndexRow& r = index.as<IndexRow>()[i];
    if (r.offset < 0 || r.length < 0 || static_cast<size_t>(r.offset + r.length) > tokens)
      throw Error("cache entry " + dir + " is damaged (index out of range)", "delete it");
    Example& e = out.examples[i];
    e.ids.assign(ids.as<int32_t>() + r.offset, ids.as<int32_t>() + r.offset + r.length);
    e.prompt_len = r.prompt_len;
    if (r.has_mask) e.mask.assign(mask.as<uint8_t>() + r.offset, mask.as<uint8_t>() + r.offset + r.length);
  }
  std::ifstream in(fs::path(dir) / "stats.json");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw Error("cache entry " + dir + " is damaged (stats.json)", "delete it");
  DataStats& s = out.stats;
  s.records = j.value("records", 0);
  s.examples = j.value("examples", 0);
  s.skipped_bad = j.value("skipped_bad", 0);
  s.skipped_untrained = j.value("skipped_untrained", 0);
  s.tokens = j.value("tokens", 0);
  s.trained_tokens = j.value("trained_tokens", 0);
  s.truncated = j.value("truncated", 0);
  s.formats = j.value("formats", std::map<std::string, int64_t>{});
  s.skipped_examples = j.value("skipped_examples", std::vector<std::string>{});
  return out;
}

LoadedData load_examples_cached(const std::vector<std::string>& files, const DataSettings& settings,
                                const ExampleBuilder& builder, const CacheSettings& cache, std::ostream& log) {
  if (cache.dir.empty()) return load_examples(files, settings, builder, log);
  std::error_code ec;
  fs::create_directories(cache.dir, ec);
  if (ec) throw Error("cannot create the data cache " + cache.dir + ": " + ec.message(), "set data_cache_dir to a writable folder, or off");
  const std::string key = cache_key(files, settings, builder, cache);
  const fs::path entry = fs::path(cache.dir) / key;
  FileLock lock(fs::path(cache.dir) / (key + ".lock"));
  if (fs::is_directory(entry, ec)) {
    auto t0 = std::chrono::steady_clock::now();
    LoadedData d = read_cache_entry(entry.string());
    log << "data cache: hit " << entry.string() << " (" << d.examples.size() << " examples, nothing tokenized, "
        << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s)\n";
    return d;
  }
  // Leftovers of a killed writer: never an entry, removed here.
  for (const auto& it : fs::directory_iterator(cache.dir, ec))
    if (it.path().filename().string().rfind(key + ".tmp-", 0) == 0) fs::remove_all(it.path(), ec);
  auto t0 = std::chrono::steady_clock::now();
  LoadedData d = load_examples(files, settings, builder, log);
  const fs::path tmp = fs::path(cache.dir) / (key + ".tmp-" + std::to_string(::getpid()));
  write_cache_entry(tmp.string(), d);
  // Fault injection for the tests: die with the entry written but not yet in place.
  if (const char* fault = std::getenv("AIR_DATA_CACHE_FAULT"); fault && std::string(fault) == "before_rename") std::_Exit(3);
  fs::rename(tmp, entry, ec);
  if (ec) throw Error("cannot move the data cache entry into place " + entry.string() + ": " + ec.message());
  log << "data cache: miss, tokenized " << d.stats.records << " records in "
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s into " << entry.string() << "\n";
  return d;
}

}  // namespace air::train
