// `-o json` in the reference CLI's shapes (docs/cli.md, "JSON output"): one envelope per command
// {"v":1,"ts":"<RFC3339 UTC>","data":{...}}, the error envelope with code/kind/retryable, and JSON lines
// ({"type":"LOG"|"ALERT"|"ERROR"|"STATUS"|"SUBMITTED",...}) for `logs` and `run --watch`.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "cli/verbs.h"
#include "core/base/error.h"

namespace air::cli {

// "2026-12-03T21:46:41Z"
std::string rfc3339_now();

// The success envelope around data, indented 2 spaces, on ctx.out.
nlohmann::json envelope(const nlohmann::json& data);
void print_json(const Context& ctx, const nlohmann::json& data);
// One JSON line (an event of a stream), compact, flushed.
void print_json_line(const Context& ctx, const nlohmann::json& event);

// The error envelope: code INVALID_ARGS (usage, exit 2) | NOT_FOUND (HTTP 404) | UNAUTHENTICATED (401/403)
// | INTERNAL_ERROR; kind PERMANENT | NOT_FOUND | TRANSIENT; retryable only for TRANSIENT. Our hint and, for a
// workload, every diagnostic ride along (extra fields a reader of the reference's shape ignores).
nlohmann::json error_envelope(const Error& e);
// The same, as printed: indented 2 spaces, keys in the reference's order.
std::string error_envelope_text(const Error& e);
std::string envelope_text(const char* key, const nlohmann::json& body);

}  // namespace air::cli
