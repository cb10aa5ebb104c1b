// Picks the reader by extension; Parquet's string columns become Alpaca records (a null input is "").
#include "trainer/data/alpaca.h"

#include "core/base/error.h"
#include "trainer/data/parquet.h"

namespace air::train {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The column as one string per row; nulls become "" unless `required`.
std::vector<std::string> string_column(const data::ParquetFile& f, const std::string& name, bool required) {
  int i = f.find_column(name);
  if (i < 0) {
    if (!required) return std::vector<std::string>(static_cast<size_t>(f.num_rows()));
    std::string have;
    for (const auto& c : f.columns()) have += (have.empty() ? "" : ", ") + c.name;
    throw Error(f.path() + ": no column '" + name + "' (columns: " + have + ")", "Alpaca data has instruction, input and output columns");
  }
  const auto& info = f.columns()[static_cast<size_t>(i)];
  if (info.type != data::PhysicalType::kByteArray)
    throw Error(f.path() + ": column '" + name + "' is " + data::type_name(info.type) + ", expected strings (BYTE_ARRAY)");
  data::ColumnData c = f.read_column(i);
  std::vector<std::string> out;
  out.reserve(c.present.size());
  size_t v = 0;
  for (size_t row = 0; row < c.present.size(); ++row) {
    if (c.present[row]) {
      out.push_back(std::move(c.values.bytes[v++]));
    } else if (required) {
      throw Error(f.path() + ": row " + std::to_string(row) + ": '" + name + "' is null", "Alpaca records need an instruction and an output");
    } else {
      out.emplace_back();
    }
  }
  return out;
}

}  // namespace

std::vector<AlpacaRecord> read_alpaca_parquet(const std::string& path) {
  data::ParquetFile f(path);
  auto ins = string_column(f, "instruction", true);
  auto inp = string_column(f, "input", false);
  auto outp = string_column(f, "output", true);
  std::vector<AlpacaRecord> out(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) out[i] = {std::move(ins[i]), std::move(inp[i]), std::move(outp[i])};
  return out;
}

std::vector<AlpacaRecord> read_alpaca(const std::string& path) {
  if (ends_with(path, ".jsonl")) return read_alpaca_jsonl(path);
  if (ends_with(path, ".parquet")) return read_alpaca_parquet(path);
  return read_alpaca_json(path);
}

}  // namespace air::train
