// parse_safetensors_header (see trainer/checkpoint/safetensors_header.h): no libtorch, so the fuzz build can use it.
#include "trainer/checkpoint/safetensors_header.h"

#include <nlohmann/json.hpp>

#include "core/base/error.h"

namespace air::train {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

TensorEntry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& v,
                        uint64_t data_size) {
  auto bad = [&](const std::string& what) {
    return Error(path + ": tensor '" + name + "': " + what, "the file is corrupt or was not fully written");
  };
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    throw bad("header entry needs dtype, shape and data_offsets");
  TensorEntry e;
  if (!v["dtype"].is_string()) throw bad("dtype is not a string");
  e.dtype = v["dtype"];
  size_t elem = safetensors_dtype_size(e.dtype);
  if (elem == 0) throw Error(path + ": tensor '" + name + "': unsupported dtype '" + e.dtype + "'");
  if (!v["shape"].is_array()) throw bad("shape is not a list");
  // The byte count is computed with an overflow check: a huge shape must not wrap to a small size that
  // happens to match the offsets (a tensor over bytes the file does not have).
  uint64_t bytes = elem;
  bool overflow = false;
  for (const auto& d : v["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) throw bad("shape has a bad dimension " + d.dump());
    e.shape.push_back(d.get<int64_t>());
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d.get<int64_t>()), &bytes)) overflow = true;
  }
  if (overflow) throw bad("shape " + shape_str(e.shape) + " is too large");
  const auto& o = v["data_offsets"];
  if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
    throw bad("data_offsets must be two non-negative integers");
  e.begin = o[0];
  e.end = o[1];
  if (e.begin > e.end) throw bad("data_offsets are reversed");
  if (e.end > data_size)
    throw bad("data ends at byte " + std::to_string(e.end) + " but the file holds only " +
              std::to_string(data_size) + " data bytes (truncated?)");
  if (e.end - e.begin != bytes)
    throw bad("shape " + shape_str(e.shape) + " in " + e.dtype + " needs " + std::to_string(bytes) +
              " bytes, data_offsets give " + std::to_string(e.end - e.begin));
  return e;
}

}  // namespace

size_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> kSizes = {{"F32", 4}, {"BF16", 2}, {"F16", 2}, {"F64", 8},
                                                       {"I64", 8}, {"I32", 4},  {"I16", 2}, {"I8", 1},
                                                       {"U8", 1},  {"BOOL", 1}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, size_t size, const std::string& path) {
  if (size < 8)
    throw Error(path + ": file is " + std::to_string(size) + " bytes, too short for a safetensors header",
                "the file is corrupt or was not fully written");
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  if (hlen > kMaxSafetensorsHeaderBytes || hlen > size - 8)
    throw Error(path + ": header length " + std::to_string(hlen) + " does not fit the file (" +
                    std::to_string(size) + " bytes)",
                "the file is corrupt, truncated, or not a safetensors file");
  auto header = nlohmann::json::parse(bytes + 8, bytes + 8 + hlen, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    throw Error(path + ": the header is not a JSON object", "the file is corrupt or not a safetensors file");
  SafetensorsHeader h;
  h.data_offset = 8 + hlen;
  const uint64_t data_size = size - 8 - hlen;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (v.is_object())
        for (const auto& [k, mv] : v.items())
          if (mv.is_string()) h.metadata[k] = mv.get<std::string>();
      continue;
    }
    h.entries[name] = parse_entry(path, name, v, data_size);
  }
  return h;
}

}  // namespace air::train
