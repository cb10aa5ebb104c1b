// Parquet's delta encodings, which arrow-rs and parquet-mr pick for version-2 pages without a dictionary:
// DELTA_BINARY_PACKED (integers: blocks of bit-packed deltas from a per-block minimum), and on top of it
// DELTA_LENGTH_BYTE_ARRAY (lengths, then the bytes) and DELTA_BYTE_ARRAY (shared-prefix lengths + suffixes).
#include <stdexcept>

#include "trainer/data/parquet_encoding.h"

namespace air::data {
namespace {

uint64_t uleb(const uint8_t*& p, const uint8_t* end) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) throw std::runtime_error("DELTA_BINARY_PACKED header overruns the page");
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("DELTA_BINARY_PACKED varint is too long");
}

int64_t zigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace

size_t decode_delta_binary_packed(const uint8_t* data, size_t size, size_t count, std::vector<int64_t>& out) {
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  uint64_t block = uleb(p, end), miniblocks = uleb(p, end), total = uleb(p, end);
  uint64_t value = static_cast<uint64_t>(zigzag(uleb(p, end)));
  if (block == 0 || miniblocks == 0 || block % miniblocks != 0 || (block / miniblocks) % 8 != 0 || block > (1u << 20))
    throw std::runtime_error("DELTA_BINARY_PACKED block sizes are invalid");
  if (total < count) throw std::runtime_error("DELTA_BINARY_PACKED holds " + std::to_string(total) + " values, the page needs " + std::to_string(count));
  const uint64_t per_mini = block / miniblocks;
  size_t got = 0;
  if (count > 0) {
    out.push_back(static_cast<int64_t>(value));
    ++got;
  }
  // The header's count covers every value encoded, so all blocks are read even past `count`, to find the end.
  uint64_t left = total > 0 ? total - 1 : 0;
  while (left > 0) {
    uint64_t min_delta = static_cast<uint64_t>(zigzag(uleb(p, end)));
    if (static_cast<uint64_t>(end - p) < miniblocks) throw std::runtime_error("DELTA_BINARY_PACKED bit widths overrun the page");
    const uint8_t* widths = p;
    p += miniblocks;
    for (uint64_t m = 0; m < miniblocks && left > 0; ++m) {
      int w = widths[m];
      if (w > 64) throw std::runtime_error("DELTA_BINARY_PACKED bit width " + std::to_string(w) + " is above 64");
      uint64_t bytes = per_mini * static_cast<uint64_t>(w) / 8;
      if (static_cast<uint64_t>(end - p) < bytes) throw std::runtime_error("DELTA_BINARY_PACKED miniblock overruns the page");
      uint64_t n = std::min(per_mini, left);
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t delta = 0;
        uint64_t bit = i * static_cast<uint64_t>(w);
        for (int b = 0; b < w; ++b, ++bit) delta |= static_cast<uint64_t>((p[bit / 8] >> (bit % 8)) & 1) << b;
        value += min_delta + delta;  // wraps like the writer's arithmetic
        if (got < count) {
          out.push_back(static_cast<int64_t>(value));
          ++got;
        }
      }
      left -= n;
      p += bytes;
    }
  }
  return static_cast<size_t>(p - data);
}

size_t decode_delta_length_byte_array(const uint8_t* data, size_t size, size_t count, std::vector<std::string>& out) {
  std::vector<int64_t> lengths;
  size_t off = decode_delta_binary_packed(data, size, count, lengths);
  for (int64_t n : lengths) {
    if (n < 0 || static_cast<uint64_t>(n) > size - off) throw std::runtime_error("DELTA_LENGTH_BYTE_ARRAY values overrun the page");
    out.emplace_back(reinterpret_cast<const char*>(data + off), static_cast<size_t>(n));
    off += static_cast<size_t>(n);
  }
  return off;
}

size_t decode_delta_byte_array(const uint8_t* data, size_t size, size_t count, std::vector<std::string>& out) {
  std::vector<int64_t> prefixes;
  size_t off = decode_delta_binary_packed(data, size, count, prefixes);
  std::vector<std::string> suffixes;
  off += decode_delta_length_byte_array(data + off, size - off, count, suffixes);
  std::string prev;
  for (size_t i = 0; i < count; ++i) {
    if (prefixes[i] < 0 || static_cast<uint64_t>(prefixes[i]) > prev.size())
      throw std::runtime_error("DELTA_BYTE_ARRAY prefix longer than the previous value");
    prev = prev.substr(0, static_cast<size_t>(prefixes[i])) + suffixes[i];
    out.push_back(prev);
  }
  return off;
}

}  // namespace air::data
