// Field ids from parquet.thrift (apache/parquet-format); unknown fields are skipped, as Thrift intends.
#include "trainer/data/parquet_meta.h"

#include "trainer/data/thrift_compact.h"

namespace air::data {
namespace {

void expect(TType got, TType want, const char* what) {
  if (got != want) throw ThriftError(std::string("field ") + what + " has the wrong Thrift type");
}

template <typename Fn>
void read_list(CompactReader& r, TType field_type, TType want_elem, const char* what, Fn each) {
  expect(field_type, TType::kList, what);
  TType elem;
  uint32_t n = r.read_list_header(elem);
  if (n && elem != want_elem) throw ThriftError(std::string("list ") + what + " has the wrong element type");
  for (uint32_t i = 0; i < n; ++i) each();
}

SchemaElement read_schema_element(CompactReader& r) {
  SchemaElement s;
  r.read_struct([&](int16_t id, TType t) {
    switch (id) {
      case 1: expect(t, TType::kI32, "SchemaElement.type"); s.type = static_cast<PhysicalType>(r.read_i32()); return true;
      case 2: expect(t, TType::kI32, "SchemaElement.type_length"); s.type_length = r.read_i32(); return true;
      case 3: expect(t, TType::kI32, "SchemaElement.repetition_type"); s.repetition = static_cast<Repetition>(r.read_i32()); return true;
      case 4: expect(t, TType::kBinary, "SchemaElement.name"); s.name = r.read_binary(); return true;
      case 5: expect(t, TType::kI32, "SchemaElement.num_children"); s.num_children = r.read_i32(); return true;
      default: return false;
    }
  });
  return s;
}

ColumnMeta read_column_meta(CompactReader& r) {
  ColumnMeta m;
  r.read_struct([&](int16_t id, TType t) {
    switch (id) {
      case 1: expect(t, TType::kI32, "ColumnMetaData.type"); m.type = static_cast<PhysicalType>(r.read_i32()); return true;
      case 3: read_list(r, t, TType::kBinary, "path_in_schema", [&] { m.path.push_back(r.read_binary()); }); return true;
      case 4: expect(t, TType::kI32, "ColumnMetaData.codec"); m.codec = static_cast<Codec>(r.read_i32()); return true;
      case 5: expect(t, TType::kI64, "ColumnMetaData.num_values"); m.num_values = r.read_i64(); return true;
      case 7: expect(t, TType::kI64, "total_compressed_size"); m.total_compressed_size = r.read_i64(); return true;
      case 9: expect(t, TType::kI64, "data_page_offset"); m.data_page_offset = r.read_i64(); return true;
      case 11: expect(t, TType::kI64, "dictionary_page_offset"); m.dictionary_page_offset = r.read_i64(); return true;
      default: return false;
    }
  });
  return m;
}

RowGroup read_row_group(CompactReader& r) {
  RowGroup g;
  r.read_struct([&](int16_t id, TType t) {
    if (id == 1) {
      read_list(r, t, TType::kStruct, "RowGroup.columns", [&] {
        bool has_meta = false;
        r.read_struct([&](int16_t cid, TType ct) {
          if (cid == 1) throw ThriftError("column chunks in other files (file_path) are not supported");
          if (cid != 3) return false;
          expect(ct, TType::kStruct, "ColumnChunk.meta_data");
          g.columns.push_back(read_column_meta(r));
          has_meta = true;
          return true;
        });
        if (!has_meta) throw ThriftError("a column chunk has no meta_data");
      });
      return true;
    }
    if (id == 3) { expect(t, TType::kI64, "RowGroup.num_rows"); g.num_rows = r.read_i64(); return true; }
    return false;
  });
  return g;
}

void read_data_page_header(CompactReader& r, DataPageHeader& d, bool v2) {
  r.read_struct([&](int16_t id, TType t) {
    auto i32 = [&](int32_t& out) { expect(t, TType::kI32, "DataPageHeader field"); out = r.read_i32(); return true; };
    auto enc = [&](Encoding& out) { expect(t, TType::kI32, "DataPageHeader encoding"); out = static_cast<Encoding>(r.read_i32()); return true; };
    if (!v2) {
      switch (id) {
        case 1: return i32(d.num_values);
        case 2: return enc(d.encoding);
        case 3: return enc(d.definition_level_encoding);
        default: return false;
      }
    }
    switch (id) {
      case 1: return i32(d.num_values);
      case 2: return i32(d.num_nulls);
      case 3: return i32(d.num_rows);
      case 4: return enc(d.encoding);
      case 5: return i32(d.definition_levels_byte_length);
      case 6: return i32(d.repetition_levels_byte_length);
      case 7:
        if (t != TType::kTrue && t != TType::kFalse) throw ThriftError("is_compressed is not a bool");
        d.is_compressed = r.read_bool(t);
        return true;
      default: return false;
    }
  });
}

}  // namespace

FileMeta parse_file_meta(const uint8_t* data, size_t size) {
  CompactReader r(data, size);
  FileMeta f;
  r.read_struct([&](int16_t id, TType t) {
    switch (id) {
      case 2: read_list(r, t, TType::kStruct, "schema", [&] { f.schema.push_back(read_schema_element(r)); }); return true;
      case 3: expect(t, TType::kI64, "FileMetaData.num_rows"); f.num_rows = r.read_i64(); return true;
      case 4: read_list(r, t, TType::kStruct, "row_groups", [&] { f.row_groups.push_back(read_row_group(r)); }); return true;
      case 6: expect(t, TType::kBinary, "created_by"); f.created_by = r.read_binary(); return true;
      default: return false;
    }
  });
  return f;
}

PageHeader parse_page_header(const uint8_t* data, size_t size) {
  CompactReader r(data, size);
  PageHeader h;
  r.read_struct([&](int16_t id, TType t) {
    switch (id) {
      case 1: expect(t, TType::kI32, "PageHeader.type"); h.type = static_cast<PageType>(r.read_i32()); return true;
      case 2: expect(t, TType::kI32, "uncompressed_page_size"); h.uncompressed_page_size = r.read_i32(); return true;
      case 3: expect(t, TType::kI32, "compressed_page_size"); h.compressed_page_size = r.read_i32(); return true;
      case 5: expect(t, TType::kStruct, "data_page_header"); read_data_page_header(r, h.data, false); return true;
      case 7:
        expect(t, TType::kStruct, "dictionary_page_header");
        r.read_struct([&](int16_t did, TType dt) {
          if (did == 1) { expect(dt, TType::kI32, "num_values"); h.dict_num_values = r.read_i32(); return true; }
          if (did == 2) { expect(dt, TType::kI32, "encoding"); h.dict_encoding = static_cast<Encoding>(r.read_i32()); return true; }
          return false;
        });
        return true;
      case 8: expect(t, TType::kStruct, "data_page_header_v2"); read_data_page_header(r, h.data, true); return true;
      default: return false;
    }
  });
  h.header_size = r.consumed();
  return h;
}

std::string type_name(PhysicalType t) {
  static const char* n[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  auto i = static_cast<int32_t>(t);
  return i >= 0 && i < 8 ? n[i] : "type " + std::to_string(i);
}

std::string codec_name(Codec c) {
  static const char* n[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
  auto i = static_cast<int32_t>(c);
  return i >= 0 && i < 8 ? n[i] : "codec " + std::to_string(i);
}

std::string encoding_name(Encoding e) {
  static const char* n[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED", "DELTA_BINARY_PACKED",
                            "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  auto i = static_cast<int32_t>(e);
  return i >= 0 && i < 10 ? n[i] : "encoding " + std::to_string(i);
}

}  // namespace air::data
