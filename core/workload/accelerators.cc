// The catalog itself: Databricks' three GPU types, two H200 types, and CPU types for machines without GPUs.
#include "core/workload/accelerators.h"

namespace air {

const std::vector<AcceleratorType>& accelerator_catalog() {
  static const std::vector<AcceleratorType> catalog = {
      {"GPU_1xA10", 1, true, "1x A10", "one NVIDIA A10 per node"},
      {"GPU_1xH100", 1, true, "1x H100", "one NVIDIA H100 per node"},
      {"GPU_8xH100", 8, true, "8x H100", "eight NVIDIA H100 per node"},
      {"GPU_1xH200", 1, true, "1x H200", "one NVIDIA H200 per node"},
      {"GPU_8xH200", 8, true, "8x H200", "eight NVIDIA H200 per node"},
      {"CPU_1xHOST", 1, false, "1x CPU", "one rank slot per node on the host CPU (no GPU)"},
      {"CPU_2xHOST", 2, false, "2x CPU", "two rank slots per node on the host CPU (no GPU)"},
      {"CPU_4xHOST", 4, false, "4x CPU", "four rank slots per node on the host CPU (no GPU)"},
      {"CPU_8xHOST", 8, false, "8x CPU", "eight rank slots per node on the host CPU (no GPU)"},
  };
  return catalog;
}

const AcceleratorType* find_accelerator(std::string_view name) {
  for (const auto& a : accelerator_catalog()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::vector<std::string> accelerator_names() {
  std::vector<std::string> names;
  for (const auto& a : accelerator_catalog()) names.push_back(a.name);
  return names;
}

}  // namespace air
