// The invariants checked per input: no exception escapes, an accepted workload has no errors, a rejected
// one has at least one, every located diagnostic has a sane position, and rendering works.
#include "tests/fuzz/workload_fuzz_target.h"

#include <exception>

#include "core/base/error.h"
#include "core/workload/requirement.h"
#include "core/workload/workload.h"
#include "core/workload/keys.h"
#include "core/workload/plan.h"

namespace air {

namespace {

std::string check(const ParseResult& r, const std::string& input) {
  size_t errors = 0;
  for (const auto& d : r.diagnostics) {
    if (d.severity == "error") ++errors;
    if (d.line < 0 || (d.line > 0 && d.column < 1) || d.length < 1) return "diagnostic with a bad position";
    if (d.message.empty()) return "diagnostic without a message";
    // yaml-cpp's own wording must not reach the user (the input itself may of course spell it).
    if (d.message.find("yaml-cpp") != std::string::npos && input.find("yaml-cpp") == std::string::npos)
      return "library message leaked: " + d.message;
    (void)render(d);
  }
  if (r.ok() && errors > 0) return "accepted with errors";
  if (!r.ok() && errors == 0) return "rejected without an error";
  (void)render_all(r.diagnostics, "fuzz.yaml", "nothing was submitted");
  if (r.ok()) {
    PlanInput in;
    in.workload = &*r.workload;
    (void)render_plan_text(in);
    (void)plan_to_json(in).dump();
  }
  return {};
}

}  // namespace

std::string fuzz_workload_once(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ParseOptions opts;
    opts.check_paths = false;
    if (std::string bad = check(parse_workload_text(text, "fuzz.yaml", "/nonexistent", opts), text); !bad.empty())
      return bad;
    // The same bytes as an override value and as an override path.
    size_t cut = text.find('\n');
    std::string first = text.substr(0, cut == std::string::npos ? text.size() : cut);
    opts.overrides = {"parameters.x=" + first, first, "compute.num_accelerators=" + first};
    std::string base = "experiment_name: f\ncompute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}\n"
                       "command: x\n";
    if (std::string bad = check(parse_workload_text(base, "fuzz.yaml", "/", opts), text); !bad.empty()) return bad;
    (void)check_requirement(first);
    try {
      (void)field_help("config." + first);
    } catch (const Error&) {
      // An unknown field is a clean usage error.
    }
  } catch (const std::exception& e) {
    return std::string("exception escaped: ") + e.what();
  } catch (...) {
    return "unknown exception escaped";
  }
  return {};
}

}  // namespace air
