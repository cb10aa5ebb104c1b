// air-train-check --fp8: the GPU's FP8 GEMMs (trainer/model/fp8_linear.h) at the 8B block shapes against
// exact fp32 GEMMs and against the float emulation the CPU tests run, with their speed beside bf16's.
#pragma once
#include <ostream>

namespace air::train::fp8 {

// Prints one line per GEMM and a PASS/FAIL line; returns 0 when every error is within bounds.
int run_gpu_check(std::ostream& out);

}  // namespace air::train::fp8
