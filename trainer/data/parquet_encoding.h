// Parquet's value encodings and page codecs: the RLE / bit-packed hybrid (levels, dictionary indices,
// booleans), PLAIN values, the DELTA_* encodings, and SNAPPY / GZIP / ZSTD decompression. Errors are std::runtime_error with a
// short reason; the reader adds the file and the column.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/data/parquet_meta.h"

namespace air::data {

// Decodes `count` values of `bit_width` bits (0..32) from RLE / bit-packed hybrid data.
void decode_rle_hybrid(const uint8_t* data, size_t size, int bit_width, size_t count, std::vector<uint32_t>& out);

// The decoded values of one column, one vector used by type: ints (BOOLEAN, INT32, INT64), reals (FLOAT,
// DOUBLE) or bytes (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY).
struct Values {
  std::vector<int64_t> ints;
  std::vector<double> reals;
  std::vector<std::string> bytes;
  size_t size() const { return ints.size() + reals.size() + bytes.size(); }
};

// Appends `count` PLAIN-encoded values of `type`; returns the bytes consumed.
size_t decode_plain(const uint8_t* data, size_t size, PhysicalType type, int32_t type_length, size_t count, Values& out);

// The delta encodings (parquet_delta.cc): append `count` values, return the bytes consumed.
size_t decode_delta_binary_packed(const uint8_t* data, size_t size, size_t count, std::vector<int64_t>& out);
size_t decode_delta_length_byte_array(const uint8_t* data, size_t size, size_t count, std::vector<std::string>& out);
size_t decode_delta_byte_array(const uint8_t* data, size_t size, size_t count, std::vector<std::string>& out);

// Decompresses a page into exactly `uncompressed_size` bytes.
std::vector<uint8_t> decompress(Codec codec, const uint8_t* data, size_t size, size_t uncompressed_size);

}  // namespace air::data
