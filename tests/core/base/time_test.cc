// core/base/time.h: UTC time as text and "10m / 1h / 30d" durations.
#include <catch2/catch.hpp>

#include "core/base/time.h"

using air::format_utc;
using air::parse_duration_ms;
using air::TimeFormat;

TEST_CASE("format_utc: each format of one instant, the epoch and a time before it") {
  const int64_t t = 1764678896789;  // 2025-12-02 12:34:56.789 UTC, a Tuesday
  CHECK(format_utc(t, TimeFormat::kIso) == "2025-12-02T12:34:56Z");
  CHECK(format_utc(t, TimeFormat::kIsoMillis) == "2025-12-02T12:34:56.789Z");
  CHECK(format_utc(t, TimeFormat::kReadable) == "2025-12-02 12:34:56 UTC");
  CHECK(format_utc(t, TimeFormat::kHttp) == "Tue, 02 Dec 2025 12:34:56 GMT");
  CHECK(format_utc(0, TimeFormat::kIsoMillis) == "1970-01-01T00:00:00.000Z");
  CHECK(format_utc(-1, TimeFormat::kIsoMillis) == "1969-12-31T23:59:59.999Z");
  CHECK(air::unix_now_ms() > t);
}

TEST_CASE("parse_duration_ms: a number and one unit of s, m, h or d, and a bare number takes the default unit") {
  CHECK(parse_duration_ms("90s", 'm') == 90000);
  CHECK(parse_duration_ms("10m", 's') == 600000);
  CHECK(parse_duration_ms("1h", 's') == 3600000);
  CHECK(parse_duration_ms("30d", 's') == int64_t{30} * 86400000);
  CHECK(parse_duration_ms("1.5h", 's') == 5400000);
  CHECK(parse_duration_ms("10", 'm') == 600000);
  CHECK(parse_duration_ms("10", 's') == 10000);
  CHECK(parse_duration_ms("0", 'm') == 0);
  for (const char* bad : {"", "m", "-5m", "+5m", "5 m", "5mm", "5w", "1e3s", "1.2.3s", "h1", "99999999999999999d"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration_ms(bad, 'm'));
  }
}
