// Reads a Parquet file: "PAR1" + column chunks + footer (FileMetaData, Thrift compact) + footer length +
// "PAR1". Each column chunk is an optional dictionary page followed by data pages; nullable columns carry
// definition levels (RLE hybrid, bit width 1 for a flat schema).
#include "trainer/data/parquet.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/error.h"
#include "trainer/data/thrift_compact.h"

namespace air::data {
namespace {

constexpr char kSupportedHint[] =
    "supported: flat columns of BOOLEAN/INT32/INT64/FLOAT/DOUBLE/BYTE_ARRAY/FIXED_LEN_BYTE_ARRAY, PLAIN, "
    "dictionary and DELTA_* encodings, data pages v1/v2, UNCOMPRESSED/SNAPPY/GZIP/ZSTD; rewrite the file with those "
    "(e.g. pyarrow.parquet.write_table(t, f, compression='zstd')) or convert it to JSON Lines";

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

bool is_supported_type(PhysicalType t) {
  return t != PhysicalType::kInt96 && static_cast<int32_t>(t) >= 0 && static_cast<int32_t>(t) <= 7;
}

void append_from_dict(const Values& dict, const std::vector<uint32_t>& idx, Values& out) {
  size_t n = dict.size();
  for (uint32_t i : idx)
    if (i >= n) throw std::runtime_error("dictionary index " + std::to_string(i) + " is out of range (" + std::to_string(n) + " entries)");
  if (!dict.ints.empty() || (dict.reals.empty() && dict.bytes.empty()))
    for (uint32_t i : idx) out.ints.push_back(dict.ints[i]);
  else if (!dict.reals.empty())
    for (uint32_t i : idx) out.reals.push_back(dict.reals[i]);
  else
    for (uint32_t i : idx) out.bytes.push_back(dict.bytes[i]);
}

}  // namespace

struct ParquetFile::Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

ParquetFile::ParquetFile(std::string path) : path_(std::move(path)) {
  auto fd = std::make_shared<Fd>();
  fd->fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd->fd < 0 || ::fstat(fd->fd, &st) != 0) throw Error("cannot read " + path_ + ": " + std::strerror(errno));
  size_ = static_cast<int64_t>(st.st_size);
  fd_ = std::move(fd);
  load_footer();
}

ParquetFile ParquetFile::from_bytes(std::string name, std::vector<uint8_t> bytes) {
  ParquetFile f;
  f.path_ = std::move(name);
  f.bytes_ = std::move(bytes);
  f.size_ = static_cast<int64_t>(f.bytes_.size());
  f.load_footer();
  return f;
}

const uint8_t* ParquetFile::bytes_at(int64_t offset, int64_t n, std::vector<uint8_t>& buf) const {
  if (offset < 0 || n < 0 || offset > size_ || n > size_ - offset) throw std::runtime_error("a range lies outside the file");
  if (!fd_) return bytes_.data() + offset;
  buf.resize(static_cast<size_t>(n));
  for (int64_t done = 0; done < n;) {
    const ssize_t got = ::pread(fd_->fd, buf.data() + done, static_cast<size_t>(n - done), offset + done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw Error("cannot read " + path_ + ": " + (got < 0 ? std::strerror(errno) : "the file got shorter"));
    done += got;
  }
  return buf.data();
}

void ParquetFile::fail(const std::string& what, const std::string& column, const std::string& hint) const {
  std::string msg = path_ + ": ";
  if (!column.empty()) msg += "column '" + column + "': ";
  throw Error(msg + what, hint);
}

void ParquetFile::load_footer() {
  const int64_t n = size_;
  std::vector<uint8_t> head_buf, tail_buf, footer_buf;
  if (n < 12 || std::memcmp(bytes_at(0, 4, head_buf), "PAR1", 4) != 0)
    fail("not a Parquet file (no PAR1 magic at the start)", {}, "the file may be truncated or in another format");
  const uint8_t* tail = bytes_at(n - 8, 8, tail_buf);
  if (std::memcmp(tail + 4, "PAR1", 4) != 0) {
    if (std::memcmp(tail + 4, "PARE", 4) == 0) fail("encrypted Parquet files are not supported");
    fail("truncated Parquet file (no PAR1 magic at the end)", {}, "download it again");
  }
  uint32_t footer = load_u32(tail);
  if (footer > n - 12) fail("truncated Parquet file (the footer claims " + std::to_string(footer) + " bytes)", {}, "download it again");
  try {
    meta_ = parse_file_meta(bytes_at(n - 8 - footer, footer, footer_buf), footer);
  } catch (const ThriftError& e) {
    fail(std::string("corrupt footer: ") + e.what(), {}, "download it again");
  }
  if (meta_.schema.empty()) fail("the footer has no schema");
  const auto& root = meta_.schema[0];
  if (static_cast<size_t>(root.num_children) != meta_.schema.size() - 1) {
    std::string group;
    for (size_t i = 1; i < meta_.schema.size() && group.empty(); ++i)
      if (meta_.schema[i].num_children > 0 || !meta_.schema[i].type) group = meta_.schema[i].name;
    fail("nested columns (structs, lists, maps) are not supported", group, kSupportedHint);
  }
  for (size_t i = 1; i < meta_.schema.size(); ++i) {
    const auto& s = meta_.schema[i];
    if (!s.type || s.num_children > 0) fail("nested columns (structs, lists, maps) are not supported", s.name, kSupportedHint);
    if (s.repetition == Repetition::kRepeated) fail("repeated columns (lists) are not supported", s.name, kSupportedHint);
    if (!is_supported_type(*s.type)) fail("physical type " + type_name(*s.type) + " is not supported", s.name, kSupportedHint);
    columns_.push_back({s.name, *s.type, s.type_length, s.repetition == Repetition::kOptional});
  }
  int64_t rows = 0;
  for (const auto& g : meta_.row_groups) {
    if (g.columns.size() != columns_.size()) fail("a row group has " + std::to_string(g.columns.size()) + " column chunks for " + std::to_string(columns_.size()) + " columns");
    if (g.num_rows < 0) fail("a row group has a negative row count");
    rows += g.num_rows;
  }
  if (rows != meta_.num_rows) fail("the row groups hold " + std::to_string(rows) + " rows, the footer says " + std::to_string(meta_.num_rows));
}

int ParquetFile::find_column(const std::string& name) const {
  for (size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i].name == name) return static_cast<int>(i);
  return -1;
}

ColumnData ParquetFile::read_column(int index) const {
  ColumnData out;
  out.info = columns_.at(static_cast<size_t>(index));
  for (size_t g = 0; g < meta_.row_groups.size(); ++g) read_group(index, g, out);
  return out;
}

ColumnData ParquetFile::read_column(int index, size_t row_group) const {
  ColumnData out;
  out.info = columns_.at(static_cast<size_t>(index));
  read_group(index, row_group, out);
  return out;
}

void ParquetFile::read_group(int index, size_t row_group, ColumnData& out) const {
  const RowGroup& g = meta_.row_groups.at(row_group);
  const ColumnMeta& chunk = g.columns[static_cast<size_t>(index)];
  try {
    if (chunk.type != out.info.type) throw std::runtime_error("column chunk type differs from the schema");
    size_t before = out.present.size();
    read_chunk(chunk, g.num_rows, out);
    if (out.present.size() - before != static_cast<size_t>(g.num_rows))
      throw std::runtime_error("a row group has " + std::to_string(g.num_rows) + " rows but the column chunk " +
                               std::to_string(out.present.size() - before) + " values");
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(e.what(), out.info.name, "the file may be corrupt; download it again");
  }
}

void ParquetFile::read_chunk(const ColumnMeta& chunk, int64_t rows, ColumnData& out) const {
  const ColumnInfo& col = out.info;
  if (chunk.codec != Codec::kUncompressed && chunk.codec != Codec::kSnappy && chunk.codec != Codec::kGzip && chunk.codec != Codec::kZstd)
    fail("compression codec " + codec_name(chunk.codec) + " is not supported", col.name, kSupportedHint);
  int64_t start = chunk.dictionary_page_offset && *chunk.dictionary_page_offset > 0
                      ? std::min(*chunk.dictionary_page_offset, chunk.data_page_offset) : chunk.data_page_offset;
  if (start < 4 || chunk.total_compressed_size < 0 || start > size_ - 8 || chunk.total_compressed_size > size_ - 8 - start)
    throw std::runtime_error("column chunk lies outside the file");
  std::vector<uint8_t> buf;  // the chunk's bytes, read from the file for this call only
  const uint8_t* p = bytes_at(start, chunk.total_compressed_size, buf);
  const uint8_t* end = p + chunk.total_compressed_size;
  Values dict;
  bool have_dict = false;
  int64_t got_rows = 0;
  std::vector<uint32_t> levels, idx;
  while (p < end && got_rows < rows) {
    PageHeader h;
    try {
      h = parse_page_header(p, static_cast<size_t>(end - p));
    } catch (const ThriftError& e) {
      throw std::runtime_error(std::string("corrupt page header: ") + e.what());
    }
    p += h.header_size;
    if (h.compressed_page_size < 0 || h.uncompressed_page_size < 0 || h.compressed_page_size > end - p)
      throw std::runtime_error("page overruns the column chunk");
    const uint8_t* body = p;
    p += h.compressed_page_size;
    if (h.type == PageType::kIndexPage) continue;
    if (h.uncompressed_page_size > (1 << 30)) throw std::runtime_error("page larger than 1 GiB");
    if (h.type == PageType::kDictionaryPage) {
      if (h.dict_encoding != Encoding::kPlain && h.dict_encoding != Encoding::kPlainDictionary)
        fail("dictionary page encoding " + encoding_name(h.dict_encoding) + " is not supported", col.name, kSupportedHint);
      if (h.dict_num_values < 0 || h.dict_num_values > h.uncompressed_page_size * 8 + 8) throw std::runtime_error("bad dictionary size");
      auto raw = decompress(chunk.codec, body, static_cast<size_t>(h.compressed_page_size), static_cast<size_t>(h.uncompressed_page_size));
      dict = {};
      decode_plain(raw.data(), raw.size(), col.type, col.type_length, static_cast<size_t>(h.dict_num_values), dict);
      have_dict = true;
      continue;
    }
    if (h.type != PageType::kDataPage && h.type != PageType::kDataPageV2)
      throw std::runtime_error("unknown page type " + std::to_string(static_cast<int>(h.type)));
    const bool v2 = h.type == PageType::kDataPageV2;
    const DataPageHeader& d = h.data;
    if (d.num_values < 0 || d.num_values > rows - got_rows) throw std::runtime_error("page holds more values than its row group");
    // Writers cap pages at ~20k rows (arrow) or 1 MB; a larger claim from a few bytes is a corrupt header.
    if (d.num_values > std::max<int64_t>(int64_t{1} << 20, 8 * int64_t{h.uncompressed_page_size} + 64))
      throw std::runtime_error("page claims " + std::to_string(d.num_values) + " values in " + std::to_string(h.uncompressed_page_size) + " bytes");
    const size_t nvals = static_cast<size_t>(d.num_values);
    std::vector<uint8_t> raw;
    const uint8_t* q;
    size_t qn;
    levels.clear();
    if (v2) {
      if (d.repetition_levels_byte_length != 0) fail("repetition levels (lists) are not supported", col.name, kSupportedHint);
      if (d.definition_levels_byte_length < 0 || d.definition_levels_byte_length > h.compressed_page_size)
        throw std::runtime_error("definition levels overrun the page");
      size_t lv = static_cast<size_t>(d.definition_levels_byte_length);
      if (col.nullable) decode_rle_hybrid(body, lv, 1, nvals, levels);
      size_t comp = static_cast<size_t>(h.compressed_page_size) - lv;
      if (static_cast<size_t>(h.uncompressed_page_size) < lv) throw std::runtime_error("page sizes are inconsistent");
      size_t uncomp = static_cast<size_t>(h.uncompressed_page_size) - lv;
      raw = d.is_compressed ? decompress(chunk.codec, body + lv, comp, uncomp) : decompress(Codec::kUncompressed, body + lv, comp, comp);
      q = raw.data();
      qn = raw.size();
    } else {
      raw = decompress(chunk.codec, body, static_cast<size_t>(h.compressed_page_size), static_cast<size_t>(h.uncompressed_page_size));
      q = raw.data();
      qn = raw.size();
      if (col.nullable) {
        if (d.definition_level_encoding != Encoding::kRle)
          fail("definition level encoding " + encoding_name(d.definition_level_encoding) + " is not supported", col.name, kSupportedHint);
        if (qn < 4 || load_u32(q) > qn - 4) throw std::runtime_error("definition levels overrun the page");
        uint32_t lv = load_u32(q);
        decode_rle_hybrid(q + 4, lv, 1, nvals, levels);
        q += 4 + lv;
        qn -= 4 + lv;
      }
    }
    size_t present = nvals;
    if (col.nullable) {
      present = 0;
      for (uint32_t l : levels) {
        if (l > 1) throw std::runtime_error("definition level " + std::to_string(l) + " above the maximum 1");
        present += l;
        out.present.push_back(static_cast<uint8_t>(l));
      }
    } else {
      out.present.insert(out.present.end(), nvals, 1);
    }
    switch (d.encoding) {
      case Encoding::kPlain:
        decode_plain(q, qn, col.type, col.type_length, present, out.values);
        break;
      case Encoding::kRle:
        if (col.type != PhysicalType::kBoolean) fail("RLE encoding of " + type_name(col.type) + " values is not supported", col.name, kSupportedHint);
        if (qn < 4 || load_u32(q) > qn - 4) throw std::runtime_error("RLE boolean values overrun the page");
        idx.clear();
        decode_rle_hybrid(q + 4, load_u32(q), 1, present, idx);
        for (uint32_t v : idx) out.values.ints.push_back(v);
        break;
      case Encoding::kDeltaBinaryPacked:
        if (col.type != PhysicalType::kInt32 && col.type != PhysicalType::kInt64)
          fail("DELTA_BINARY_PACKED encoding of " + type_name(col.type) + " values is not supported", col.name, kSupportedHint);
        decode_delta_binary_packed(q, qn, present, out.values.ints);
        if (col.type == PhysicalType::kInt32)  // the deltas wrap at 32 bits for INT32 columns
          for (size_t i = out.values.ints.size() - present; i < out.values.ints.size(); ++i)
            out.values.ints[i] = static_cast<int32_t>(out.values.ints[i]);
        break;
      case Encoding::kDeltaLengthByteArray:
      case Encoding::kDeltaByteArray:
        if (col.type != PhysicalType::kByteArray && col.type != PhysicalType::kFixedLenByteArray)
          fail(encoding_name(d.encoding) + " encoding of " + type_name(col.type) + " values is not supported", col.name, kSupportedHint);
        if (d.encoding == Encoding::kDeltaByteArray) decode_delta_byte_array(q, qn, present, out.values.bytes);
        else decode_delta_length_byte_array(q, qn, present, out.values.bytes);
        break;
      case Encoding::kRleDictionary:
      case Encoding::kPlainDictionary: {
        if (!have_dict) throw std::runtime_error("a dictionary-encoded page comes without a dictionary page");
        if (present == 0) break;
        if (qn < 1) throw std::runtime_error("dictionary indices missing");
        idx.clear();
        decode_rle_hybrid(q + 1, qn - 1, q[0], present, idx);
        append_from_dict(dict, idx, out.values);
        break;
      }
      default:
        fail("encoding " + encoding_name(d.encoding) + " is not supported", col.name, kSupportedHint);
    }
    got_rows += static_cast<int64_t>(nvals);
  }
  if (got_rows != rows) throw std::runtime_error("column chunk ends after " + std::to_string(got_rows) + " of " + std::to_string(rows) + " rows");
}

}  // namespace air::data
