// Flat example storage (example_set.h): the owned form, the read-only mapping of a cache entry, the writer.
#include "trainer/data/example_set.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/base/error.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

// A read-only, shared mapping of a whole file: its pages are the page cache's, one copy per node.
class Mapping {
 public:
  explicit Mapping(const fs::path& p) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open cache file " + p.string(), "delete the entry's folder; the next start writes it again");
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      throw Error("cannot stat cache file " + p.string());
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) data_ = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (data_ == MAP_FAILED) throw Error("cannot map cache file " + p.string());
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (data_ && data_ != MAP_FAILED) ::munmap(data_, size_);
  }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

int64_t ExampleRef::targets_within(int64_t len) const {
  int64_t n = 0;
  for (int64_t t = 1; t < len && t < size; ++t) n += trained(t);
  return n;
}

struct ExampleSet::Storage {
  std::vector<ExampleIndexRow> index;
  std::vector<int32_t> ids;
  std::vector<uint8_t> mask;
  std::unique_ptr<Mapping> index_map, ids_map, mask_map;
};

ExampleSet::ExampleSet(const std::vector<Example>& examples) {
  auto s = std::make_shared<Storage>();
  size_t tokens = 0;
  for (const auto& e : examples) tokens += e.ids.size();
  s->index.reserve(examples.size());
  s->ids.reserve(tokens);
  s->mask.reserve(tokens);
  for (const auto& e : examples) {
    s->index.push_back({static_cast<int64_t>(s->ids.size()), static_cast<int64_t>(e.ids.size()), e.prompt_len, !e.mask.empty()});
    s->ids.insert(s->ids.end(), e.ids.begin(), e.ids.end());
    if (e.mask.empty()) s->mask.resize(s->ids.size(), 0);
    else s->mask.insert(s->mask.end(), e.mask.begin(), e.mask.end());
  }
  count_ = s->index.size();
  parts_.push_back({nullptr, s->index.data(), s->ids.data(), s->mask.data(), 0, count_});
  parts_.back().storage = std::move(s);
}

ExampleSet ExampleSet::map_entry(const std::string& dir) {
  auto s = std::make_shared<Storage>();
  const fs::path d(dir);
  s->index_map = std::make_unique<Mapping>(d / "index.bin");
  s->ids_map = std::make_unique<Mapping>(d / "ids.bin");
  s->mask_map = std::make_unique<Mapping>(d / "mask.bin");
  const size_t n = s->index_map->size() / sizeof(ExampleIndexRow), tokens = s->ids_map->size() / sizeof(int32_t);
  const std::string hint = "delete the entry's folder; the next start writes it again";
  if (s->index_map->size() % sizeof(ExampleIndexRow) || s->ids_map->size() % sizeof(int32_t))
    throw Error("cache entry " + dir + " is damaged (a file has a partial record)", hint);
  if (s->mask_map->size() != tokens) throw Error("cache entry " + dir + " is damaged (mask and ids differ in length)", hint);
  ExampleSet out;
  const auto* index = static_cast<const ExampleIndexRow*>(s->index_map->data());
  out.count_ = n;
  // Every row in range (reads the index once; the tokens are not touched).
  for (size_t i = 0; i < n; ++i) {
    const ExampleIndexRow& r = index[i];
    if (r.offset < 0 || r.length < 0 || static_cast<uint64_t>(r.offset) + static_cast<uint64_t>(r.length) > tokens)
      throw Error("cache entry " + dir + " is damaged (index row " + std::to_string(i) + " out of range)", hint);
  }
  const auto* ids = static_cast<const int32_t*>(s->ids_map->data());
  const auto* mask = static_cast<const uint8_t*>(s->mask_map->data());
  out.parts_.push_back({std::move(s), index, ids, mask, 0, n});
  return out;
}

ExampleSet ExampleSet::concat(const std::vector<ExampleSet>& sets) {
  ExampleSet out;
  std::vector<uint32_t> pick;
  bool picked = false;
  for (const ExampleSet& s : sets) {
    picked = picked || s.pick_;
    for (const Part& p : s.parts_) {
      out.parts_.push_back(p);
      out.parts_.back().first = out.count_ + p.first;
    }
    for (size_t i = 0; i < s.size(); ++i) pick.push_back(static_cast<uint32_t>(out.count_ + (s.pick_ ? (*s.pick_)[i] : i)));
    out.count_ += s.count_;
  }
  if (picked) out.pick_ = std::make_shared<const std::vector<uint32_t>>(std::move(pick));
  return out;
}

ExampleRef ExampleSet::operator[](size_t i) const {
  const auto [p, k] = locate(i);
  const ExampleIndexRow& r = p->index[k];
  return {p->ids + r.offset, r.has_mask ? p->mask + r.offset : nullptr, r.length, r.prompt_len};
}

ExampleSet ExampleSet::select(std::vector<uint32_t> indices) const {
  ExampleSet out = *this;
  if (pick_)
    for (auto& i : indices) i = (*pick_)[i];
  out.pick_ = std::make_shared<const std::vector<uint32_t>>(std::move(indices));
  return out;
}

Example ExampleSet::copy(size_t i) const {
  const ExampleRef r = (*this)[i];
  Example e;
  e.ids.assign(r.ids, r.ids + r.size);
  e.prompt_len = r.prompt_len;
  if (r.mask) e.mask.assign(r.mask, r.mask + r.size);
  return e;
}

bool ExampleSet::mapped() const {
  for (const Part& p : parts_)
    if (!p.storage || !p.storage->ids_map) return false;
  return !parts_.empty();
}

struct ExampleSetWriter::Files {
  std::string dir;
  std::FILE* index = nullptr;
  std::FILE* ids = nullptr;
  std::FILE* mask = nullptr;
  std::vector<char> bufs[3];
  bool failed = false;
  ~Files() {
    for (std::FILE* f : {index, ids, mask})
      if (f) std::fclose(f);
  }
  std::FILE* open(const char* name, std::vector<char>& buf) {
    std::FILE* f = std::fopen((fs::path(dir) / name).c_str(), "wb");
    if (!f) throw Error("cannot write " + (fs::path(dir) / name).string(), "set data_cache_dir to a writable folder, or off");
    buf.resize(1 << 20);
    std::setvbuf(f, buf.data(), _IOFBF, buf.size());
    return f;
  }
  void put(std::FILE* f, const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f) != n) failed = true;
  }
};

ExampleSetWriter::ExampleSetWriter(const std::string& dir) : f_(std::make_unique<Files>()) {
  fs::create_directories(dir);
  f_->dir = dir;
  f_->index = f_->open("index.bin", f_->bufs[0]);
  f_->ids = f_->open("ids.bin", f_->bufs[1]);
  f_->mask = f_->open("mask.bin", f_->bufs[2]);
}

ExampleSetWriter::~ExampleSetWriter() = default;

void ExampleSetWriter::add(const ExampleRef& e) {
  if (!f_->index) throw Error("the cache entry " + f_->dir + " is already finished");
  const ExampleIndexRow row{tokens_, e.size, e.prompt_len, e.mask != nullptr};
  f_->put(f_->index, &row, sizeof row);
  f_->put(f_->ids, e.ids, static_cast<size_t>(e.size) * sizeof(int32_t));
  if (e.mask) {
    f_->put(f_->mask, e.mask, static_cast<size_t>(e.size));
  } else {
    static const uint8_t kZeros[4096] = {};
    for (int64_t left = e.size; left > 0; left -= static_cast<int64_t>(sizeof kZeros))
      f_->put(f_->mask, kZeros, static_cast<size_t>(std::min<int64_t>(left, sizeof kZeros)));
  }
  tokens_ += e.size;
  ++examples_;
}

void ExampleSetWriter::add(const Example& e) {
  add(ExampleRef{e.ids.data(), e.mask.empty() ? nullptr : e.mask.data(), static_cast<int64_t>(e.ids.size()), e.prompt_len});
}

void ExampleSetWriter::finish() {
  bool ok = !f_->failed;
  for (std::FILE** f : {&f_->index, &f_->ids, &f_->mask}) {
    if (*f && std::fclose(*f) != 0) ok = false;
    *f = nullptr;
  }
  if (!ok) throw Error("cannot write the data cache entry " + f_->dir + " (disk full?)", "free space, or set data_cache_dir: off");
}

}  // namespace air::train
