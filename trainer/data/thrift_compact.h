// A reader for Thrift's compact protocol, enough for Parquet's footer and page headers: structs, lists,
// varints, strings, and skipping whatever field we do not need. Every read is bounds-checked.
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace air::data {

// Thrown on malformed input; the Parquet reader adds the file and what it was reading.
class ThriftError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class TType : uint8_t {
  kStop = 0, kTrue = 1, kFalse = 2, kByte = 3, kI16 = 4, kI32 = 5, kI64 = 6, kDouble = 7,
  kBinary = 8, kList = 9, kSet = 10, kMap = 11, kStruct = 12,
};

class CompactReader {
 public:
  CompactReader(const uint8_t* data, size_t size) : p_(data), end_(data + size), begin_(data) {}

  // Calls on_field(id, type) for each field of a struct; the callback reads the value with one of the
  // read_* calls below, or returns false to have it skipped.
  void read_struct(const std::function<bool(int16_t id, TType type)>& on_field);
  // Reads a list header, returning the element count and setting `elem`.
  uint32_t read_list_header(TType& elem);

  int32_t read_i32() { return static_cast<int32_t>(zigzag(read_varint())); }
  int64_t read_i64() { return zigzag(read_varint()); }
  std::string read_binary();
  bool read_bool(TType field_type) { return field_type == TType::kTrue; }
  void skip(TType type, int depth = 0);

  size_t consumed() const { return static_cast<size_t>(p_ - begin_); }

 private:
  uint64_t read_varint();
  uint8_t read_byte();
  static int64_t zigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
  void need(size_t n) const;

  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* begin_;
  int depth_ = 0;
};

}  // namespace air::data
