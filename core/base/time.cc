// format_utc and parse_duration_ms (core/base/time.h).
#include "core/base/time.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fmt/format.h>

namespace air {

std::string format_utc(int64_t ms, TimeFormat f) {
  // Floor division, so that a time before the epoch still reads as the second it falls in.
  int64_t secs = ms / 1000, frac = ms % 1000;
  if (frac < 0) {
    secs -= 1;
    frac += 1000;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  switch (f) {
    case TimeFormat::kIso:
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
      return buf;
    case TimeFormat::kIsoMillis:
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
      return fmt::format("{}.{:03d}Z", buf, static_cast<int>(frac));
    case TimeFormat::kReadable:
      std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
      return buf;
    case TimeFormat::kHttp:
      // strftime's %a and %b follow the locale; HTTP's names are English whatever the locale.
      static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
      static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
      return fmt::format("{}, {:02d} {} {:04d} {:02d}:{:02d}:{:02d} GMT", kDays[tm.tm_wday], tm.tm_mday,
                         kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  return {};
}

int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<int64_t> parse_duration_ms(std::string_view text, char default_unit) {
  // Digits with at most one '.', then at most one unit letter; nothing else (no sign, no spaces, no exponent).
  size_t i = 0;
  bool digits = false, dot = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') digits = true;
    else if (c == '.' && !dot) dot = true;
    else break;
  }
  if (!digits || text.size() - i > 1) return std::nullopt;
  char unit = i < text.size() ? text[i] : default_unit;
  double mult = unit == 's' ? 1e3 : unit == 'm' ? 6e4 : unit == 'h' ? 3.6e6 : unit == 'd' ? 8.64e7 : -1;
  if (mult < 0) return std::nullopt;
  double v = 0;
  try {
    v = std::stod(std::string(text.substr(0, i)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (v * mult > 9.2e18) return std::nullopt;  // past int64's milliseconds
  return static_cast<int64_t>(v * mult);
}

}  // namespace air
