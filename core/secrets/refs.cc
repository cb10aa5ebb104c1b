// missing_secret_diagnostic (see core/secrets/refs.h).
#include "core/secrets/refs.h"

#include <fmt/format.h>

namespace air {

Diagnostic missing_secret_diagnostic(const SecretRef& ref, const std::string& file) {
  Diagnostic d;
  d.file = file.empty() ? "workload.yaml" : file;
  d.message = fmt::format("secret '{}' references {}/{}, which does not exist in the workspace", ref.name, ref.scope,
                          ref.key);
  d.hint = fmt::format("create it: air secrets put-secret {} {}  (the value is read from stdin or a hidden prompt)",
                       ref.scope, ref.key);
  return d;
}

}  // namespace air
