// HYPERPARAMETERS_PATH: the workload's `parameters`, written as YAML for the command to read.
#pragma once
#include <string>

namespace air::launcher {

// Writes parameters_yaml to path atomically ("{}" when empty, so the file always parses as a mapping).
// Throws air::Error on failure.
void write_hyperparameters(const std::string& path, const std::string& parameters_yaml);

}  // namespace air::launcher
