// Checks our Parquet reader against files written by an independent writer (parquet-wasm, driven by
// tests/e2e/parquet_oracle.sh):
//   parquet_oracle_check compare FILE.parquet EXPECTED.json   every column equals the writer's values
//   parquet_oracle_check error FILE.parquet TEXT              reading fails with an air::Error holding TEXT
//   parquet_oracle_check mutate FILE.parquet SECONDS SEED     truncated and byte-flipped copies: each one
//                                                             reads or fails with an air::Error, never crashes
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "trainer/data/parquet.h"

using air::data::ColumnData;
using air::data::ParquetFile;
using air::data::PhysicalType;

namespace {

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json cell(const ColumnData& c, size_t value) {
  switch (c.info.type) {
    case PhysicalType::kBoolean: return c.values.ints[value] != 0;
    case PhysicalType::kInt32: case PhysicalType::kInt64: return c.values.ints[value];
    case PhysicalType::kFloat: case PhysicalType::kDouble: return c.values.reals[value];
    default: return c.values.bytes[value];
  }
}

int compare(const std::string& file, const std::string& expected_path) {
  ParquetFile f(file);
  std::ifstream in(expected_path);
  nlohmann::json want = nlohmann::json::parse(in);
  int bad = 0;
  for (auto& [name, values] : want.items()) {
    int i = f.find_column(name);
    if (i < 0) {
      std::cerr << file << ": no column " << name << "\n";
      ++bad;
      continue;
    }
    ColumnData c = f.read_column(i);
    if (c.present.size() != values.size()) {
      std::cerr << file << ": column " << name << " has " << c.present.size() << " rows, expected " << values.size() << "\n";
      ++bad;
      continue;
    }
    size_t v = 0;
    for (size_t row = 0; row < values.size(); ++row) {
      nlohmann::json got = c.present[row] ? cell(c, v++) : nlohmann::json(nullptr);
      bool same = got == values[row];
      if (!same && got.is_number() && values[row].is_number())
        same = std::fabs(got.get<double>() - values[row].get<double>()) <= 1e-6 * std::max(1.0, std::fabs(values[row].get<double>()));
      if (!same && bad++ < 5) std::cerr << file << ": column " << name << " row " << row << ": got " << got << ", expected " << values[row] << "\n";
    }
  }
  std::cout << (bad ? "FAIL " : "ok   ") << file << " (" << f.num_rows() << " rows, " << want.size() << " columns, "
            << f.meta().row_groups.size() << " row groups)\n";
  return bad ? 1 : 0;
}

// Reads every column; true when it worked, false on an air::Error. Anything else escapes (a test failure).
bool read_all(void* unused, const std::string& name, std::vector<uint8_t> bytes, std::string* error) {
  (void)unused;
  try {
    ParquetFile f = ParquetFile::from_bytes(name, std::move(bytes));
    for (size_t i = 0; i < f.columns().size(); ++i) f.read_column(static_cast<int>(i));
    return true;
  } catch (const air::Error& e) {
    if (error) *error = e.what();
    return false;
  }
}

int expect_error(const std::string& file, const std::string& text) {
  std::string err;
  if (read_all(nullptr, file, slurp(file), &err)) {
    std::cerr << file << ": read without error, expected one containing '" << text << "'\n";
    return 1;
  }
  if (err.find(text) == std::string::npos) {
    std::cerr << file << ": error '" << err << "' does not contain '" << text << "'\n";
    return 1;
  }
  std::cout << "ok   " << file << ": " << err << "\n";
  return 0;
}

int mutate(const std::string& file, double seconds, uint64_t seed) {
  const auto original = slurp(file);
  std::mt19937_64 rng(seed);
  auto start = std::chrono::steady_clock::now();
  int runs = 0, ok = 0;
  // Every truncation point of the footer's neighbourhood first, then random ones and random byte flips.
  for (size_t cut = original.size(); cut-- > 0 && original.size() - cut < 512;) {
    ok += read_all(nullptr, file, std::vector<uint8_t>(original.begin(), original.begin() + static_cast<long>(cut)), nullptr);
    ++runs;
  }
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    auto bytes = original;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < flips; ++k) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    ok += read_all(nullptr, file, std::move(bytes), nullptr);
    ++runs;
  }
  std::cout << "ok   " << file << ": " << runs << " mutated copies, " << ok << " still readable, the rest failed cleanly\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "compare" && argc == 4) return compare(argv[2], argv[3]);
    if (mode == "error" && argc == 4) return expect_error(argv[2], argv[3]);
    if (mode == "mutate" && argc == 5) return mutate(argv[2], std::stod(argv[3]), std::stoull(argv[4]));
  } catch (const air::Error& e) {
    std::cerr << "error: " << e.what() << (e.hint().empty() ? "" : "\n  hint: " + e.hint()) << "\n";
    return 1;
  }
  std::cerr << "usage: parquet_oracle_check compare FILE EXPECTED.json | error FILE TEXT | mutate FILE SECONDS SEED\n";
  return 2;
}
