// Parquet's footer and page headers (parquet.thrift), the fields the reader uses, parsed from Thrift's
// compact protocol. Names follow the format specification.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace air::data {

enum class PhysicalType : int32_t {
  kBoolean = 0, kInt32 = 1, kInt64 = 2, kInt96 = 3, kFloat = 4, kDouble = 5, kByteArray = 6, kFixedLenByteArray = 7,
};
enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };
enum class Codec : int32_t { kUncompressed = 0, kSnappy = 1, kGzip = 2, kLzo = 3, kBrotli = 4, kLz4 = 5, kZstd = 6, kLz4Raw = 7 };
enum class Encoding : int32_t {
  kPlain = 0, kPlainDictionary = 2, kRle = 3, kBitPacked = 4, kDeltaBinaryPacked = 5, kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7, kRleDictionary = 8, kByteStreamSplit = 9,
};
enum class PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };

std::string type_name(PhysicalType t);
std::string codec_name(Codec c);
std::string encoding_name(Encoding e);

struct SchemaElement {
  std::optional<PhysicalType> type;  // absent for groups
  int32_t type_length = 0;
  Repetition repetition = Repetition::kRequired;
  std::string name;
  int32_t num_children = 0;
};

struct ColumnMeta {
  PhysicalType type = PhysicalType::kBoolean;
  std::vector<std::string> path;
  Codec codec = Codec::kUncompressed;
  int64_t num_values = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
};

struct RowGroup {
  std::vector<ColumnMeta> columns;
  int64_t num_rows = 0;
};

struct FileMeta {
  std::vector<SchemaElement> schema;
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::string created_by;
};

struct DataPageHeader {  // v1 and v2 share this; v2-only fields are zero for v1
  int32_t num_values = 0, num_nulls = 0, num_rows = 0;
  Encoding encoding = Encoding::kPlain;
  Encoding definition_level_encoding = Encoding::kRle;
  int32_t definition_levels_byte_length = 0, repetition_levels_byte_length = 0;
  bool is_compressed = true;
};

struct PageHeader {
  PageType type = PageType::kDataPage;
  int32_t uncompressed_page_size = 0, compressed_page_size = 0;
  DataPageHeader data;  // DATA_PAGE or DATA_PAGE_V2
  int32_t dict_num_values = 0;
  Encoding dict_encoding = Encoding::kPlain;
  size_t header_size = 0;  // bytes the header itself took
};

// Both throw ThriftError on malformed input.
FileMeta parse_file_meta(const uint8_t* data, size_t size);
PageHeader parse_page_header(const uint8_t* data, size_t size);

}  // namespace air::data
