// Located diagnostics in GCC form (file:line:col: error: ...), with the source line, a caret, and a hint.
// Every validation error of a workload is one Diagnostic; they render the same on the CLI and when the
// workspace re-validates (they travel in the HTTP error body's "diagnostics").
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace air {

struct Diagnostic {
  std::string file;      // as the user named it
  int line = 0;          // 1-based; 0 when the error has no location (e.g. a missing file)
  int column = 0;        // 1-based
  int length = 1;        // caret width (^~~~)
  std::string message;   // "unknown key 'acelerator_type' in 'compute'"
  std::string source_line;  // the text of that line, for the caret display
  std::string hint;      // "did you mean 'accelerator_type'?" (may be empty)
  std::string severity = "error";  // error | warning
};

// Renders one diagnostic:
//   train.yaml:7:5: error: unknown key 'acelerator_type' in 'compute'
//       acelerator_type: GPU_8xH100
//       ^~~~~~~~~~~~~~~
//     hint: did you mean 'accelerator_type'?
std::string render(const Diagnostic& d);
// Renders all (errors beyond max_shown are counted in a "... and N more errors" line), then a summary line
// ("air: 2 errors in train.yaml; nothing was submitted"). `what` is the part after the ';' (may be empty).
std::string render_all(const std::vector<Diagnostic>& ds, const std::string& file, const std::string& what,
                       int max_shown = 20);

nlohmann::json to_json(const Diagnostic& d);
Diagnostic diagnostic_from_json(const nlohmann::json& j);

}  // namespace air
