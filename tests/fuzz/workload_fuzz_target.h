// One fuzz input through everything that reads a workload: the parser (with and without overrides),
// rendering, the plan, the requirement checker and field help. Returns a description of a broken
// invariant, or an empty string when the input was handled properly (accepted or rejected cleanly).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace air {

std::string fuzz_workload_once(const uint8_t* data, size_t size);

}  // namespace air
