// `--override KEY=VALUE`: set one field of the loaded workload tree before validation. KEY is a dotted path
// checked against the key table (any sub-key under parameters, env_variables and secrets); VALUE is YAML.
// Errors point into the --override argument itself ("--override:1:N: error: ...").
#pragma once
#include <string>
#include <vector>

#include "core/yaml/tree.h"

namespace air {

// Applies each override in order to root (a mapping). Each argument becomes a YamlSource appended to
// sources so diagnostics can show it. Returns one line per applied override for the user
// ("Override: changing compute.num_accelerators from 16 to 32"). Errors go to the sink.
std::vector<std::string> apply_overrides(YamlNode& root, std::vector<YamlSource>& sources,
                                         const std::vector<std::string>& overrides, DiagnosticSink& sink);

}  // namespace air
