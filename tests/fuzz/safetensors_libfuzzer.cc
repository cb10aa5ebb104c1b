// libFuzzer target: the safetensors header (trainer/safetensors_header, no libtorch). Any bytes are a
// "file": the parser accepts them or throws air::Error; an accepted header's every tensor lies inside the
// data section with exactly the bytes its dtype and shape need.
#include <cstdint>
#include <string>

#include "core/base/error.h"
#include "tests/fuzz/fuzz_check.h"
#include "trainer/checkpoint/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  air::train::SafetensorsHeader h;
  try {
    h = air::train::parse_safetensors_header(data, size, "fuzz.safetensors");
  } catch (const air::Error&) {
    return 0;
  }
  FUZZ_CHECK(h.data_offset >= 8 && h.data_offset <= size, "the data section starts outside the file");
  const uint64_t data_size = size - h.data_offset;
  for (const auto& [name, e] : h.entries) {
    FUZZ_CHECK(e.begin <= e.end && e.end <= data_size, "a tensor lies outside the data section");
    unsigned __int128 bytes = air::train::safetensors_dtype_size(e.dtype);
    for (int64_t d : e.shape) {
      FUZZ_CHECK(d >= 0, "a negative dimension was accepted");
      bytes *= static_cast<uint64_t>(d);
      if (bytes > (static_cast<unsigned __int128>(1) << 64)) bytes = static_cast<unsigned __int128>(1) << 64;
    }
    FUZZ_CHECK(bytes == e.end - e.begin, "a tensor's byte count disagrees with its shape");
  }
  return 0;
}
