// Shared by the libFuzzer targets: FUZZ_CHECK aborts with a message when an invariant breaks, so
// libFuzzer saves the input as a crash artifact (a sanitizer report does the same on its own).
#pragma once
#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                        \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, __LINE__, what); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)
