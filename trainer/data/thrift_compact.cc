// Thrift compact protocol: field headers pack a field-id delta and a type into one byte; integers are
// zigzag varints; lists carry their size in the header's high nibble (15 = a varint follows).
#include "trainer/data/thrift_compact.h"

namespace air::data {
namespace {
constexpr int kMaxDepth = 32;  // Parquet's structs nest a few levels; deeper input is malformed
}

void CompactReader::need(size_t n) const {
  if (static_cast<size_t>(end_ - p_) < n)
    throw ThriftError("truncated: needs " + std::to_string(n) + " more bytes at offset " + std::to_string(consumed()));
}

uint8_t CompactReader::read_byte() {
  need(1);
  return *p_++;
}

uint64_t CompactReader::read_varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b = read_byte();
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw ThriftError("varint longer than 10 bytes at offset " + std::to_string(consumed()));
}

std::string CompactReader::read_binary() {
  uint64_t n = read_varint();
  need(n);
  std::string s(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return s;
}

uint32_t CompactReader::read_list_header(TType& elem) {
  uint8_t h = read_byte();
  elem = static_cast<TType>(h & 0x0f);
  uint64_t n = h >> 4;
  if (n == 15) n = read_varint();
  // Every element takes at least one byte, so a larger count than the bytes left is malformed.
  if (n > static_cast<uint64_t>(end_ - p_)) throw ThriftError("list of " + std::to_string(n) + " elements overruns the data");
  return static_cast<uint32_t>(n);
}

void CompactReader::read_struct(const std::function<bool(int16_t, TType)>& on_field) {
  if (++depth_ > kMaxDepth) throw ThriftError("structs nested deeper than " + std::to_string(kMaxDepth));
  int16_t last = 0;
  for (;;) {
    uint8_t h = read_byte();
    auto type = static_cast<TType>(h & 0x0f);
    if (type == TType::kStop) break;
    if (static_cast<uint8_t>(type) > static_cast<uint8_t>(TType::kStruct))
      throw ThriftError("unknown field type " + std::to_string(h & 0x0f) + " at offset " + std::to_string(consumed()));
    int16_t delta = h >> 4;
    int16_t id = delta ? static_cast<int16_t>(last + delta) : static_cast<int16_t>(zigzag(read_varint()));
    last = id;
    if (!on_field(id, type)) skip(type, depth_);
  }
  --depth_;
}

void CompactReader::skip(TType type, int depth) {
  if (depth > kMaxDepth) throw ThriftError("values nested deeper than " + std::to_string(kMaxDepth));
  switch (type) {
    case TType::kTrue: case TType::kFalse: return;  // a struct field's bool lives in its header
    case TType::kByte: need(1); ++p_; return;
    case TType::kI16: case TType::kI32: case TType::kI64: read_varint(); return;
    case TType::kDouble: need(8); p_ += 8; return;
    case TType::kBinary: read_binary(); return;
    case TType::kList: case TType::kSet: {
      TType elem;
      uint32_t n = read_list_header(elem);
      for (uint32_t i = 0; i < n; ++i) {
        if (elem == TType::kTrue || elem == TType::kFalse) { need(1); ++p_; }  // a byte each inside lists
        else skip(elem, depth + 1);
      }
      return;
    }
    case TType::kMap: {
      uint64_t n = read_varint();
      if (n == 0) return;
      if (n > static_cast<uint64_t>(end_ - p_)) throw ThriftError("map overruns the data");
      uint8_t kv = read_byte();
      for (uint64_t i = 0; i < n; ++i) {
        skip(static_cast<TType>(kv >> 4), depth + 1);
        skip(static_cast<TType>(kv & 0x0f), depth + 1);
      }
      return;
    }
    case TType::kStruct: {
      int saved = depth_;
      depth_ = depth;
      read_struct([](int16_t, TType) { return false; });
      depth_ = saved;
      return;
    }
    default: throw ThriftError("cannot skip field type " + std::to_string(static_cast<int>(type)));
  }
}

}  // namespace air::data
