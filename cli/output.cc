// The JSON envelopes of `-o json`, shared by every verb.
#include "cli/output.h"

#include <ctime>
#include <ostream>

#include "core/client/client.h"
#include "core/base/time.h"

namespace air::cli {

std::string rfc3339_now() { return format_utc(unix_now_ms(), TimeFormat::kIso); }

nlohmann::json envelope(const nlohmann::json& data) {
  return nlohmann::json{{"v", 1}, {"ts", rfc3339_now()}, {"data", data}};
}

// The envelope's keys in the reference's order (v, ts, data), which nlohmann::json's sorted map would not keep.
std::string envelope_text(const char* key, const nlohmann::json& body) {
  std::string inner = body.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string indented;
  for (char c : inner) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
  return "{\n  \"v\": 1,\n  \"ts\": \"" + rfc3339_now() + "\",\n  \"" + key + "\": " + indented + "\n}";
}

void print_json(const Context& ctx, const nlohmann::json& data) {
  *ctx.out << envelope_text("data", data) << "\n";
  ctx.out->flush();
}

void print_json_line(const Context& ctx, const nlohmann::json& event) {
  *ctx.out << event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  ctx.out->flush();
}

nlohmann::json error_envelope(const Error& e) {
  std::string code = "INTERNAL_ERROR", kind = "TRANSIENT";
  if (e.exit_code() == kExitUsage) code = "INVALID_ARGS", kind = "PERMANENT";
  nlohmann::json diagnostics;
  if (const auto* api = dynamic_cast<const ApiError*>(&e)) {
    if (api->http_status() == 404) code = "NOT_FOUND", kind = "NOT_FOUND";
    else if (api->http_status() == 401 || api->http_status() == 403) code = "UNAUTHENTICATED", kind = "PERMANENT";
    else if (api->http_status() >= 400 && api->http_status() < 500) code = "INVALID_ARGS", kind = "PERMANENT";
    if (!api->diagnostics().empty()) {
      diagnostics = nlohmann::json::array();
      for (const auto& d : api->diagnostics()) diagnostics.push_back(to_json(d));
    }
  }
  nlohmann::json err{{"code", code}, {"kind", kind}, {"message", e.what()}, {"retryable", kind == "TRANSIENT"}};
  if (!e.hint().empty()) err["hint"] = e.hint();
  if (!diagnostics.is_null()) err["diagnostics"] = diagnostics;
  return nlohmann::json{{"v", 1}, {"ts", rfc3339_now()}, {"error", err}};
}

std::string error_envelope_text(const Error& e) { return envelope_text("error", error_envelope(e)["error"]); }

}  // namespace air::cli
