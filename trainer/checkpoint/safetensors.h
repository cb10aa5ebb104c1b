// The safetensors format, read and written by us: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}}, then raw little-endian data. Reading memory-maps the file;
// writing streams tensors one at a time so a checkpoint never needs the whole model in memory at once.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/checkpoint/safetensors_header.h"

namespace air::train {

// One memory-mapped .safetensors file. Every problem is an air::Error naming the file (and tensor).
class SafetensorsFile {
 public:
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  // A CPU tensor over the mapped bytes (kept alive by the tensor), copied only when misaligned.
  at::Tensor get(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  const uint8_t* data_ = nullptr;  // start of the data section
  std::map<std::string, TensorEntry> entries_;
  std::map<std::string, std::string> metadata_;
  std::weak_ptr<SafetensorsFile> self_;
};

// A model's weights: one model.safetensors, or shards listed by model.safetensors.index.json.
class WeightSet {
 public:
  // Opens the weights in `dir`; throws when there are none (the message says what was looked for).
  static WeightSet open_dir(const std::string& dir);
  static bool dir_has_weights(const std::string& dir);
  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  const std::string& file_of(const std::string& name) const;
  at::Tensor get(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::string> where_;  // tensor name -> file path
};

std::string safetensors_dtype_name(at::ScalarType t);
at::ScalarType safetensors_dtype(const std::string& name, const std::string& where);

// Writes one file from tensors already in memory (small files, tests).
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

struct TensorSpec {
  std::string name;
  at::ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t bytes() const;
};

// Writes a checkpoint's weights into `dir`, streamed tensor by tensor in the order of `specs`:
// one model.safetensors, or model-0000K-of-0000N.safetensors + model.safetensors.index.json when the
// total is above max_shard_bytes (the layout transformers' save_pretrained writes).
class ShardedWriter {
 public:
  ShardedWriter(std::string dir, std::vector<TensorSpec> specs, uint64_t max_shard_bytes);
  ~ShardedWriter();
  // Converts to the spec's dtype; the name and shape must be the next spec's.
  void write(const std::string& name, const at::Tensor& t);
  void finish();  // checks every tensor was written, closes files, writes the index
  size_t num_shards() const { return shard_files_.size(); }

 private:
  void open_shard(size_t k);
  std::string dir_;
  std::vector<TensorSpec> specs_;
  std::vector<size_t> shard_of_;  // spec index -> shard
  std::vector<std::string> shard_files_;
  size_t next_ = 0;
  int fd_ = -1;
  size_t open_shard_ = SIZE_MAX;
};

}  // namespace air::train
