// How a missing secret reference is reported, the same by the workspace (submit) and the CLI (dry-run):
// by name and scope/key only, with the command that creates it.
#pragma once
#include <string>

#include "core/base/diagnostics.h"
#include "core/workload/workload.h"

namespace air {

Diagnostic missing_secret_diagnostic(const SecretRef& ref, const std::string& file);

}  // namespace air
