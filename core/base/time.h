// UTC time as text and "10m / 1h / 30d" durations: the one home for both (the CLI's tables, JSON envelopes
// and --since / --lifetime flags, the Files API's Last-Modified, the node agent's log timestamps).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace air {

enum class TimeFormat {
  kIso,        // 2026-12-02T12:34:56Z      (RFC 3339, whole seconds)
  kIsoMillis,  // 2026-12-02T12:34:56.789Z
  kReadable,   // 2026-12-02 12:34:56 UTC
  kHttp,       // Wed, 02 Dec 2026 12:34:56 GMT (RFC 9110's IMF-fixdate)
};

// unix_ms (milliseconds since the epoch, may be before it) in UTC.
std::string format_utc(int64_t unix_ms, TimeFormat f);
// Now, by the system clock, in milliseconds since the epoch.
int64_t unix_now_ms();

// "90s", "10m", "1.5h", "30d" in milliseconds: a non-negative number (fractions allowed) and one unit of s, m,
// h or d; a bare number takes `default_unit`. nullopt for anything else (no unit we know, a negative number,
// trailing text). Each flag keeps its own error message and lower bound.
std::optional<int64_t> parse_duration_ms(std::string_view text, char default_unit);

}  // namespace air
