// The accelerator catalog: which compute.accelerator_type values exist and how many rank slots each node
// has. nodes = num_accelerators / per_node.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace air {

struct AcceleratorType {
  std::string name;     // GPU_8xH100
  int per_node = 1;     // accelerators (GPUs, or CPU rank slots) per node
  bool gpu = true;      // false for the CPU_* types: ranks run on the host CPU
  std::string display;  // "8x H100"
  std::string description;
};

const std::vector<AcceleratorType>& accelerator_catalog();
// nullptr when name is not in the catalog (the match is case-sensitive, like the real air).
const AcceleratorType* find_accelerator(std::string_view name);
std::vector<std::string> accelerator_names();

}  // namespace air
