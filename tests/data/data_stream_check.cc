// Reads a dataset file the way the tokenized-data cache's writer does (read_records_chunked: records handed on
// chunk by chunk and dropped here) and prints what that cost in memory, for tests/e2e/chat_data_stream.sh:
//   data_stream_check FILE
//   -> "records N chunks K baseline_kib B peak_kib P"   (peak resident set of this process, getrusage)
// With --whole, reads it with read_records (every record held at once), for comparison.
#include <sys/resource.h>

#include <iostream>

#include "trainer/data/record_stream.h"

using namespace air::train;

namespace {
long peak_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::string(argv[2]) != "--whole")) {
    std::cerr << "usage: data_stream_check FILE [--whole]\n";
    return 2;
  }
  try {
    const long baseline = peak_kib();
    size_t records = 0, chunks = 0;
    if (argc == 3) {
      records = read_records(argv[1], {}).records.size();
      chunks = 1;
    } else {
      read_records_chunked(argv[1], {}, [&](std::vector<Record>&& chunk, double) {
        records += chunk.size();
        ++chunks;
        std::vector<Record>().swap(chunk);
      });
    }
    std::cout << "records " << records << " chunks " << chunks << " baseline_kib " << baseline << " peak_kib " << peak_kib() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "data_stream_check: " << e.what() << "\n";
    return 1;
  }
}
