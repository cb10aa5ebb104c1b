// The safetensors header, parsed without libtorch: the 8-byte length, the JSON {name: {dtype, shape,
// data_offsets}} and __metadata__, every field checked against the file size. Fuzzed on its own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace air::train {

struct TensorEntry {
  std::string dtype;  // "BF16", "F32", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

struct SafetensorsHeader {
  uint64_t data_offset = 0;  // where the data section starts in the file (8 + header length)
  std::map<std::string, TensorEntry> entries;
  std::map<std::string, std::string> metadata;
};

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u << 20;

// Bytes per element of a safetensors dtype name; 0 when we do not support it.
size_t safetensors_dtype_size(const std::string& dtype);

// Parses the header of a whole file held in [bytes, bytes + size). Throws air::Error naming `path` (and
// the tensor) on anything malformed: a length that does not fit, bad JSON, an unsupported dtype, offsets
// outside the data or disagreeing with the shape (computed without overflow).
SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, size_t size, const std::string& path);

}  // namespace air::train
