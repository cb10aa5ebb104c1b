// Catch2 for the trainer tests that use libtorch: include this first, instead of <catch2/catch.hpp>.
// libtorch's c10 logging headers define CHECK (a fatal log that aborts the test binary). Included after Catch,
// they would take the name over, and a failing CHECK would abort instead of being reported. Here c10's logging
// comes first, its CHECK is undefined, and Catch's is defined last; the include guard keeps c10 from defining
// it again when ATen's headers follow.
#pragma once
#include <c10/util/Logging.h>
#undef CHECK
#include <catch2/catch.hpp>

namespace air::train::testing::detail {
#define AIR_CATCH_TORCH_STR2(x) #x
#define AIR_CATCH_TORCH_STR(x) AIR_CATCH_TORCH_STR2(x)
constexpr bool contains(const char* s, const char* part) {
  for (; *s; ++s) {
    const char *a = s, *b = part;
    while (*a && *b && *a == *b) ++a, ++b;
    if (!*b) return true;
  }
  return false;
}
// CHECK must expand to Catch's continuing assertion, not to c10's fatal log.
static_assert(contains(AIR_CATCH_TORCH_STR(CHECK(true)), "Catch::ResultDisposition::ContinueOnFailure"),
              "CHECK is not Catch2's: include tests/trainer/catch_torch.h before any libtorch header");
}  // namespace air::train::testing::detail
