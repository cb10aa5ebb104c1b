// Reads (mmap) and writes safetensors files, checking every header field against the file it came from.
#include "trainer/checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

std::string sys_error() { return std::strerror(errno); }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void write_all(int fd, const void* p, size_t n, const std::string& path) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot write " + path + ": " + sys_error());
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
}

// The header for tensors laid out back to back in the given order, padded to 8 bytes as HF does.
std::string make_header(const std::vector<TensorSpec>& specs, const std::map<std::string, std::string>& meta) {
  nlohmann::ordered_json h;
  if (!meta.empty()) h["__metadata__"] = meta;
  uint64_t off = 0;
  for (const auto& s : specs) {
    h[s.name] = {{"dtype", safetensors_dtype_name(s.dtype)}, {"shape", s.shape},
                 {"data_offsets", {off, off + s.bytes()}}};
    off += s.bytes();
  }
  std::string text = h.dump();
  text.append((8 - (text.size() + 8) % 8) % 8, ' ');
  return text;
}

void write_header(int fd, const std::string& header, const std::string& path) {
  uint8_t len[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  write_all(fd, len, 8, path);
  write_all(fd, header.data(), header.size(), path);
}

void write_tensor_bytes(int fd, const at::Tensor& t, at::ScalarType dtype, const std::string& path) {
  at::Tensor c = t.detach().to(at::kCPU, dtype).contiguous();
  write_all(fd, c.data_ptr(), c.numel() * c.element_size(), path);
}

int open_for_write(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot create " + path + ": " + sys_error());
  return fd;
}

void close_synced(int fd, const std::string& path) {
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw Error("cannot write " + path + ": " + sys_error());
}

}  // namespace

uint64_t TensorSpec::bytes() const {
  uint64_t n = at::elementSize(dtype);
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::string safetensors_dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "F32";
    case at::kBFloat16: return "BF16";
    case at::kHalf: return "F16";
    case at::kDouble: return "F64";
    case at::kLong: return "I64";
    case at::kInt: return "I32";
    case at::kShort: return "I16";
    case at::kChar: return "I8";
    case at::kByte: return "U8";
    case at::kBool: return "BOOL";
    default: throw Error(std::string("dtype ") + c10::toString(t) + " cannot be stored in safetensors");
  }
}

at::ScalarType safetensors_dtype(const std::string& name, const std::string& where) {
  static const std::map<std::string, at::ScalarType> kTypes = {
      {"F32", at::kFloat}, {"BF16", at::kBFloat16}, {"F16", at::kHalf}, {"F64", at::kDouble},
      {"I64", at::kLong},  {"I32", at::kInt},       {"I16", at::kShort}, {"I8", at::kChar},
      {"U8", at::kByte},   {"BOOL", at::kBool}};
  auto it = kTypes.find(name);
  if (it == kTypes.end()) throw Error(where + ": unsupported dtype '" + name + "'");
  return it->second;
}

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->self_ = f;
  f->path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path + ": " + sys_error());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error("cannot stat " + path + ": " + sys_error());
  }
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ == 0) {
    ::close(fd);
    (void)parse_safetensors_header(nullptr, 0, path);  // throws "too short"
  }
  f->map_ = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (f->map_ == MAP_FAILED) {
    f->map_ = nullptr;
    throw Error("cannot map " + path + ": " + sys_error());
  }
  const auto* bytes = static_cast<const uint8_t*>(f->map_);
  SafetensorsHeader h = parse_safetensors_header(bytes, f->size_, path);
  f->data_ = bytes + h.data_offset;
  f->entries_ = std::move(h.entries);
  f->metadata_ = std::move(h.metadata);
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, size_);
}

at::Tensor SafetensorsFile::get(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw Error(path_ + ": no tensor named '" + name + "'");
  const TensorEntry& e = it->second;
  at::ScalarType st = safetensors_dtype(e.dtype, path_);
  void* p = const_cast<uint8_t*>(data_ + e.begin);
  auto opts = at::TensorOptions().dtype(st).device(at::kCPU);
  if (reinterpret_cast<uintptr_t>(p) % at::elementSize(st) != 0) {
    at::Tensor t = at::empty(e.shape, opts);
    std::memcpy(t.data_ptr(), p, e.end - e.begin);
    return t;
  }
  auto keep = self_.lock();
  return at::from_blob(p, e.shape, [keep](void*) {}, opts);
}

bool WeightSet::dir_has_weights(const std::string& dir) {
  return fs::exists(fs::path(dir) / "model.safetensors.index.json") ||
         fs::exists(fs::path(dir) / "model.safetensors");
}

WeightSet WeightSet::open_dir(const std::string& dir) {
  WeightSet w;
  fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::vector<std::string> files;
  if (fs::exists(index)) {
    std::ifstream in(index);
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw Error(index.string() + ": not a valid index (needs a 'weight_map' object)");
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos)
        throw Error(index.string() + ": tensor '" + name + "' maps to a bad file name " + file.dump());
      std::string path = (fs::path(dir) / file.get<std::string>()).string();
      if (!w.files_.count(path)) {
        if (!fs::exists(path))
          throw Error(index.string() + " lists " + file.get<std::string>() + " (for tensor '" + name +
                      "') but the file is missing");
        w.files_[path] = SafetensorsFile::open(path);
      }
      if (!w.files_[path]->contains(name))
        throw Error(path + ": the index says it holds tensor '" + name + "' but it does not");
      w.where_[name] = path;
    }
    return w;
  }
  fs::path single = fs::path(dir) / "model.safetensors";
  if (!fs::exists(single))
    throw Error("no weights in " + dir + ": expected model.safetensors or model.safetensors.index.json",
                "set init: random to train from a random initialisation");
  auto f = SafetensorsFile::open(single.string());
  w.files_[single.string()] = f;
  for (const auto& [name, e] : f->entries()) w.where_[name] = single.string();
  return w;
}

const std::string& WeightSet::file_of(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw Error("no tensor named '" + name + "' in the weights");
  return it->second;
}

at::Tensor WeightSet::get(const std::string& name) const { return files_.at(file_of(name))->get(name); }

std::vector<std::string> WeightSet::names() const {
  std::vector<std::string> out;
  for (const auto& [n, f] : where_) out.push_back(n);
  return out;
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, t] : tensors) specs.push_back({name, t.scalar_type(), t.sizes().vec()});
  int fd = open_for_write(path);
  try {
    write_header(fd, make_header(specs, metadata), path);
    for (const auto& [name, t] : tensors) write_tensor_bytes(fd, t, t.scalar_type(), path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  close_synced(fd, path);
}

ShardedWriter::ShardedWriter(std::string dir, std::vector<TensorSpec> specs, uint64_t max_shard_bytes)
    : dir_(std::move(dir)), specs_(std::move(specs)) {
  size_t shard = 0;
  uint64_t in_shard = 0;
  for (const auto& s : specs_) {
    if (in_shard > 0 && in_shard + s.bytes() > max_shard_bytes) {
      ++shard;
      in_shard = 0;
    }
    shard_of_.push_back(shard);
    in_shard += s.bytes();
  }
  const size_t n = specs_.empty() ? 1 : shard + 1;
  for (size_t k = 0; k < n; ++k) {
    if (n == 1) {
      shard_files_.push_back("model.safetensors");
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", k + 1, n);
      shard_files_.push_back(buf);
    }
  }
}

ShardedWriter::~ShardedWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void ShardedWriter::open_shard(size_t k) {
  std::string path = (fs::path(dir_) / shard_files_[k]).string();
  if (fd_ >= 0) close_synced(fd_, path);
  fd_ = -1;
  std::vector<TensorSpec> in_shard;
  for (size_t i = 0; i < specs_.size(); ++i)
    if (shard_of_[i] == k) in_shard.push_back(specs_[i]);
  fd_ = open_for_write(path);
  write_header(fd_, make_header(in_shard, {{"format", "pt"}}), path);
  open_shard_ = k;
}

void ShardedWriter::write(const std::string& name, const at::Tensor& t) {
  if (next_ >= specs_.size() || specs_[next_].name != name)
    throw Error("checkpoint writer: tensor '" + name + "' written out of order");
  const TensorSpec& s = specs_[next_];
  if (t.sizes().vec() != s.shape)
    throw Error("checkpoint writer: tensor '" + name + "' has shape " + shape_str(t.sizes().vec()) +
                ", expected " + shape_str(s.shape));
  if (open_shard_ != shard_of_[next_]) open_shard(shard_of_[next_]);
  write_tensor_bytes(fd_, t, s.dtype, (fs::path(dir_) / shard_files_[open_shard_]).string());
  ++next_;
}

void ShardedWriter::finish() {
  if (next_ != specs_.size())
    throw Error("checkpoint writer: only " + std::to_string(next_) + " of " + std::to_string(specs_.size()) +
                " tensors were written");
  if (specs_.empty()) open_shard(0);
  if (fd_ >= 0) close_synced(fd_, (fs::path(dir_) / shard_files_[open_shard_]).string());
  fd_ = -1;
  if (shard_files_.size() == 1) return;
  nlohmann::ordered_json idx;
  uint64_t total = 0;
  for (const auto& s : specs_) total += s.bytes();
  idx["metadata"] = {{"total_size", total}};
  nlohmann::ordered_json map = nlohmann::ordered_json::object();
  for (size_t i = 0; i < specs_.size(); ++i) map[specs_[i].name] = shard_files_[shard_of_[i]];
  idx["weight_map"] = map;
  std::string path = (fs::path(dir_) / "model.safetensors.index.json").string();
  std::string text = idx.dump(2) + "\n";
  int fd = open_for_write(path);
  write_all(fd, text.data(), text.size(), path);
  close_synced(fd, path);
}

}  // namespace air::train
