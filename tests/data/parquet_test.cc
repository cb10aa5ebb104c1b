// The Parquet pieces without a writer: Thrift compact decoding, the RLE / bit-packed hybrid, PLAIN values,
// and the errors for files that are not Parquet. Files written by parquet-wasm are checked in
// tests/e2e/parquet_oracle.sh.
#include <catch2/catch.hpp>

#include "core/base/error.h"
#include "trainer/data/parquet.h"
#include "trainer/data/parquet_encoding.h"
#include "trainer/data/thrift_compact.h"

using namespace air::data;

TEST_CASE("compact protocol: struct fields, deltas, zigzag ints, strings, skipped lists") {
  // field 1 i32 = -3 (zigzag 5); field 4 binary "ab"; field 5 list<i32>[1,2] (skipped); field 20 (long form) i64 = 7
  const uint8_t bytes[] = {0x15, 0x05, 0x38, 0x02, 'a', 'b', 0x19, 0x25, 0x02, 0x04, 0x06, 0x28, 0x0e, 0x00};
  CompactReader r(bytes, sizeof bytes);
  int32_t a = 0;
  std::string s;
  int64_t big = 0;
  r.read_struct([&](int16_t id, TType t) {
    if (id == 1 && t == TType::kI32) return a = r.read_i32(), true;
    if (id == 4 && t == TType::kBinary) return s = r.read_binary(), true;
    if (id == 20 && t == TType::kI64) return big = r.read_i64(), true;
    return false;
  });
  CHECK(a == -3);
  CHECK(s == "ab");
  CHECK(big == 7);
  CHECK(r.consumed() == sizeof bytes);
}

TEST_CASE("compact protocol: truncated input is an error, not an overrun") {
  const uint8_t bytes[] = {0x18, 0x10, 'a'};  // a 16-byte string with 1 byte present
  CompactReader r(bytes, sizeof bytes);
  CHECK_THROWS_AS(r.read_struct([&](int16_t, TType) { return false; }), ThriftError);
}

TEST_CASE("RLE / bit-packed hybrid: a repeated run then a bit-packed group") {
  // run of 5 x value 1 (header 5<<1 = 10), then 1 group of 8 bit-packed 1-bit values 0b10110010
  const uint8_t bytes[] = {0x0a, 0x01, 0x03, 0xb2};
  std::vector<uint32_t> out;
  decode_rle_hybrid(bytes, sizeof bytes, 1, 13, out);
  CHECK(out == std::vector<uint32_t>{1, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1});
  std::vector<uint32_t> more;
  CHECK_THROWS(decode_rle_hybrid(bytes, 2, 1, 13, more));  // asks past the data
}

TEST_CASE("PLAIN byte arrays and an overrun") {
  const uint8_t bytes[] = {2, 0, 0, 0, 'h', 'i', 0, 0, 0, 0, 5, 0, 0, 0, 'x'};
  Values v;
  CHECK(decode_plain(bytes, 10, PhysicalType::kByteArray, 0, 2, v) == 10);
  CHECK(v.bytes == std::vector<std::string>{"hi", ""});
  CHECK_THROWS(decode_plain(bytes, sizeof bytes, PhysicalType::kByteArray, 0, 3, v));
}

TEST_CASE("not a Parquet file, and a truncated one, name the file") {
  try {
    ParquetFile::from_bytes("data/x.parquet", {'{', '}', '\n', 0, 0, 0, 0, 0, 0, 0, 0, 0});
    FAIL("no error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()) == "data/x.parquet: not a Parquet file (no PAR1 magic at the start)");
  }
  try {
    ParquetFile::from_bytes("t.parquet", {'P', 'A', 'R', '1', 1, 2, 3, 4, 5, 6, 7, 8, 9});
    FAIL("no error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()) == "t.parquet: truncated Parquet file (no PAR1 magic at the end)");
  }
}
