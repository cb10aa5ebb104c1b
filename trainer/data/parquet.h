// A Parquet reader for what instruction datasets need: flat schemas of BOOLEAN / INT32 / INT64 / FLOAT /
// DOUBLE / BYTE_ARRAY (strings) / FIXED_LEN_BYTE_ARRAY columns, required or nullable; PLAIN and dictionary
// (RLE_DICTIONARY / PLAIN_DICTIONARY) and DELTA_* encodings; data pages v1 and v2; UNCOMPRESSED, SNAPPY, GZIP, ZSTD.
// Anything else is an air::Error naming the feature, the column and the file.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/data/parquet_encoding.h"
#include "trainer/data/parquet_meta.h"

namespace air::data {

struct ColumnInfo {
  std::string name;
  PhysicalType type = PhysicalType::kByteArray;
  int32_t type_length = 0;
  bool nullable = false;
};

// One column of the whole file: `present[i]` says whether row i has a value; the values of the present rows
// are packed in `values` (ints, reals or bytes by type).
struct ColumnData {
  ColumnInfo info;
  std::vector<uint8_t> present;
  Values values;
};

// A file opened by path is read where needed (the footer, then each column chunk when it is decoded), never
// held whole: reading one row group at a time keeps memory at one row group's size.
class ParquetFile {
 public:
  // Reads and checks the footer. Throws air::Error (the file named) when it is not a readable Parquet file.
  explicit ParquetFile(std::string path);
  static ParquetFile from_bytes(std::string name, std::vector<uint8_t> bytes);

  const std::string& path() const { return path_; }
  int64_t num_rows() const { return meta_.num_rows; }
  const std::vector<ColumnInfo>& columns() const { return columns_; }
  const FileMeta& meta() const { return meta_; }
  // -1 when there is no such column.
  int find_column(const std::string& name) const;
  ColumnData read_column(int index) const;  // every row group
  ColumnData read_column(int index, size_t row_group) const;

 private:
  struct Fd;
  ParquetFile() = default;
  void load_footer();
  // The file's bytes [offset, offset + n): in memory (from_bytes), or read into `buf`. The range is checked.
  const uint8_t* bytes_at(int64_t offset, int64_t n, std::vector<uint8_t>& buf) const;
  void read_group(int index, size_t row_group, ColumnData& out) const;
  void read_chunk(const ColumnMeta& chunk, int64_t rows, ColumnData& out) const;
  [[noreturn]] void fail(const std::string& what, const std::string& column = {}, const std::string& hint = {}) const;

  std::string path_;
  std::shared_ptr<const Fd> fd_;  // opened by path
  std::vector<uint8_t> bytes_;    // from_bytes
  int64_t size_ = 0;
  FileMeta meta_;
  std::vector<ColumnInfo> columns_;
};

}  // namespace air::data
