// libFuzzer entry point (clang builds): abort on any broken invariant so libFuzzer saves the input.
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/workload_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bad = air::fuzz_workload_once(data, size);
  if (!bad.empty()) {
    std::fprintf(stderr, "invariant broken: %s\n", bad.c_str());
    std::abort();
  }
  return 0;
}
