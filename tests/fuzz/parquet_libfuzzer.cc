// libFuzzer entry for the Parquet reader (clang builds): any input either reads or fails with air::Error.
// tests/e2e/parquet_oracle.sh runs a bounded seeded mutation loop over real files in CI.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/base/error.h"
#include "trainer/data/parquet.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto f = air::data::ParquetFile::from_bytes("fuzz.parquet", std::vector<uint8_t>(data, data + size));
    for (size_t i = 0; i < f.columns().size(); ++i) f.read_column(static_cast<int>(i));
  } catch (const air::Error&) {
  }
  return 0;
}
