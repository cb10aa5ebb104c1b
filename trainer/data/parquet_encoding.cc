// RLE / bit-packed hybrid: a varint header; low bit 1 = (header >> 1) groups of 8 bit-packed values
// (LSB first), 0 = one value repeated (header >> 1) times, stored in ceil(bit_width / 8) bytes.
#include "trainer/data/parquet_encoding.h"

#include <cstring>
#include <stdexcept>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

namespace air::data {
namespace {

uint64_t read_uleb(const uint8_t*& p, const uint8_t* end) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) throw std::runtime_error("RLE run header overruns the page");
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("RLE run header is not a valid varint");
}

template <typename T>
T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // Parquet is little-endian, as are the machines we build for
  return v;
}

}  // namespace

void decode_rle_hybrid(const uint8_t* data, size_t size, int bit_width, size_t count, std::vector<uint32_t>& out) {
  if (bit_width < 0 || bit_width > 32) throw std::runtime_error("bit width " + std::to_string(bit_width) + " is out of range");
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  const size_t start = out.size();
  const int value_bytes = (bit_width + 7) / 8;
  while (out.size() - start < count) {
    uint64_t header = read_uleb(p, end);
    size_t left = count - (out.size() - start);
    if (header & 1) {
      uint64_t groups = header >> 1;
      if (groups == 0 || groups > (static_cast<uint64_t>(end - p) + 1)) throw std::runtime_error("bit-packed run overruns the page");
      uint64_t n = groups * 8;
      size_t bytes = static_cast<size_t>(groups) * bit_width;
      // The last run may be cut short by writers that pad only up to the values present.
      size_t have = std::min(bytes, static_cast<size_t>(end - p));
      uint64_t bitpos = 0;
      for (uint64_t i = 0; i < n && i < left; ++i, bitpos += bit_width) {
        uint64_t v = 0;
        for (int b = 0; b < bit_width; ++b) {
          uint64_t bit = bitpos + b;
          if (bit / 8 >= have) throw std::runtime_error("bit-packed run overruns the page");
          v |= static_cast<uint64_t>((p[bit / 8] >> (bit % 8)) & 1) << b;
        }
        out.push_back(static_cast<uint32_t>(v));
      }
      p += have;
    } else {
      uint64_t n = header >> 1;
      if (static_cast<size_t>(end - p) < static_cast<size_t>(value_bytes)) throw std::runtime_error("RLE run overruns the page");
      uint32_t v = 0;
      for (int b = 0; b < value_bytes; ++b) v |= static_cast<uint32_t>(p[b]) << (8 * b);
      p += value_bytes;
      if (n == 0) throw std::runtime_error("RLE run of length 0");
      out.insert(out.end(), std::min<uint64_t>(n, left), v);
    }
  }
}

size_t decode_plain(const uint8_t* data, size_t size, PhysicalType type, int32_t type_length, size_t count, Values& out) {
  auto need = [&](size_t n) {
    if (n > size) throw std::runtime_error("PLAIN values overrun the page (" + std::to_string(count) + " " + type_name(type) + " values)");
  };
  switch (type) {
    case PhysicalType::kBoolean:
      need((count + 7) / 8);
      for (size_t i = 0; i < count; ++i) out.ints.push_back((data[i / 8] >> (i % 8)) & 1);
      return (count + 7) / 8;
    case PhysicalType::kInt32:
      need(count * 4);
      for (size_t i = 0; i < count; ++i) out.ints.push_back(load_le<int32_t>(data + 4 * i));
      return count * 4;
    case PhysicalType::kInt64:
      need(count * 8);
      for (size_t i = 0; i < count; ++i) out.ints.push_back(load_le<int64_t>(data + 8 * i));
      return count * 8;
    case PhysicalType::kFloat:
      need(count * 4);
      for (size_t i = 0; i < count; ++i) out.reals.push_back(load_le<float>(data + 4 * i));
      return count * 4;
    case PhysicalType::kDouble:
      need(count * 8);
      for (size_t i = 0; i < count; ++i) out.reals.push_back(load_le<double>(data + 8 * i));
      return count * 8;
    case PhysicalType::kByteArray: {
      size_t off = 0;
      for (size_t i = 0; i < count; ++i) {
        need(off + 4);
        uint32_t n = load_le<uint32_t>(data + off);
        off += 4;
        need(off + static_cast<size_t>(n));
        out.bytes.emplace_back(reinterpret_cast<const char*>(data + off), n);
        off += n;
      }
      return off;
    }
    case PhysicalType::kFixedLenByteArray: {
      if (type_length < 0) throw std::runtime_error("negative FIXED_LEN_BYTE_ARRAY length");
      size_t n = static_cast<size_t>(type_length);
      if (n && count > size / n) need(size + 1);
      need(count * n);
      for (size_t i = 0; i < count; ++i) out.bytes.emplace_back(reinterpret_cast<const char*>(data + i * n), n);
      return count * n;
    }
    default: throw std::runtime_error("physical type " + type_name(type) + " is not supported");
  }
}

std::vector<uint8_t> decompress(Codec codec, const uint8_t* data, size_t size, size_t uncompressed_size) {
  std::vector<uint8_t> out(uncompressed_size);
  switch (codec) {
    case Codec::kUncompressed:
      if (size != uncompressed_size) throw std::runtime_error("uncompressed page size does not match its header");
      if (size) std::memcpy(out.data(), data, size);
      return out;
    case Codec::kSnappy: {
      size_t n = 0;
      if (snappy_uncompressed_length(reinterpret_cast<const char*>(data), size, &n) != SNAPPY_OK || n != uncompressed_size)
        throw std::runtime_error("SNAPPY page is corrupt (length does not match its header)");
      if (snappy_uncompress(reinterpret_cast<const char*>(data), size, reinterpret_cast<char*>(out.data()), &n) != SNAPPY_OK)
        throw std::runtime_error("SNAPPY page is corrupt");
      return out;
    }
    case Codec::kGzip: {
      z_stream z{};
      if (inflateInit2(&z, 15 + 32) != Z_OK) throw std::runtime_error("zlib failed to initialise");  // gzip or zlib header
      z.next_in = const_cast<uint8_t*>(data);
      z.avail_in = static_cast<uInt>(size);
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      int rc = inflate(&z, Z_FINISH);
      size_t got = z.total_out;
      inflateEnd(&z);
      if (rc != Z_STREAM_END || got != uncompressed_size) throw std::runtime_error("GZIP page is corrupt or its size does not match its header");
      return out;
    }
    case Codec::kZstd: {
      size_t got = ZSTD_decompress(out.data(), out.size(), data, size);
      if (ZSTD_isError(got) || got != uncompressed_size)
        throw std::runtime_error(std::string("ZSTD page is corrupt: ") + (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size mismatch"));
      return out;
    }
    default:
      throw std::runtime_error("compression codec " + codec_name(codec) + " is not supported (supported: UNCOMPRESSED, SNAPPY, GZIP, ZSTD)");
  }
}

}  // namespace air::data
