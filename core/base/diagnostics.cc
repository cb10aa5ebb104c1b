// Rendering diagnostics in GCC form and carrying them over JSON (server-side errors render like local ones).
#include "core/base/diagnostics.h"

#include <algorithm>

#include <fmt/format.h>

namespace air {

namespace {

// Very long lines (minified or generated YAML) show a window around the caret.
constexpr int kMaxShownColumns = 160;

std::vector<std::string> split_code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) == 0x80 && !out.empty()) out.back() += s[i];
    else out.emplace_back(1, s[i]);
  }
  return out;
}

Diagnostic windowed(const Diagnostic& in) {
  std::vector<std::string> cps = split_code_points(in.source_line);
  int n = static_cast<int>(cps.size());
  if (n <= kMaxShownColumns) return in;
  Diagnostic d = in;
  int start = std::max(0, in.column - 1 - kMaxShownColumns / 2);
  int end = std::min(n, start + kMaxShownColumns);
  std::string line = start > 0 ? "..." : "";
  for (int i = start; i < end; ++i) line += cps[static_cast<size_t>(i)];
  if (end < n) line += "...";
  d.source_line = line;
  d.column = in.column - start + (start > 0 ? 3 : 0);
  d.length = std::max(1, std::min(in.length, end - (in.column - 1)));
  return d;
}

std::string caret_line(const Diagnostic& d) {
  std::string out;
  int cp = 0;
  for (size_t i = 0; i < d.source_line.size() && cp < d.column - 1; ++i) {
    unsigned char c = static_cast<unsigned char>(d.source_line[i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte of a character already counted
    out += c == '\t' ? '\t' : ' ';
    ++cp;
  }
  while (cp < d.column - 1) {
    out += ' ';
    ++cp;
  }
  out += '^';
  if (d.length > 1) out.append(static_cast<size_t>(d.length - 1), '~');
  return out;
}

std::string plural(size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

std::string render(const Diagnostic& d) {
  std::string out;
  if (d.line > 0) {
    out = fmt::format("{}:{}:{}: {}: {}\n", d.file, d.line, d.column, d.severity, d.message);
    if (!d.source_line.empty()) {
      Diagnostic shown = windowed(d);
      out += shown.source_line + "\n";
      out += caret_line(shown) + "\n";
    }
  } else {
    out = fmt::format("{}: {}: {}\n", d.file, d.severity, d.message);
  }
  if (!d.hint.empty()) out += "  hint: " + d.hint + "\n";
  return out;
}

std::string render_all(const std::vector<Diagnostic>& ds, const std::string& file, const std::string& what,
                       int max_shown) {
  std::string out;
  size_t errors = 0, warnings = 0, hidden = 0;
  for (const auto& d : ds) {
    if (d.severity == "error") {
      ++errors;
      if (static_cast<int>(errors) > max_shown) {
        ++hidden;
        continue;
      }
    } else {
      ++warnings;
    }
    out += render(d);
  }
  if (hidden > 0) out += fmt::format("... and {} more {}\n", hidden, hidden == 1 ? "error" : "errors");
  std::string counts;
  if (errors > 0) counts = plural(errors, "error");
  if (warnings > 0) counts += (counts.empty() ? "" : " and ") + plural(warnings, "warning");
  if (counts.empty()) return out;
  out += fmt::format("air: {} in {}{}\n", counts, file, what.empty() ? "" : "; " + what);
  return out;
}

nlohmann::json to_json(const Diagnostic& d) {
  nlohmann::json j = {{"file", d.file},
                      {"line", d.line},
                      {"column", d.column},
                      {"length", d.length},
                      {"severity", d.severity},
                      {"message", d.message}};
  if (!d.source_line.empty()) j["source_line"] = d.source_line;
  if (!d.hint.empty()) j["hint"] = d.hint;
  return j;
}

Diagnostic diagnostic_from_json(const nlohmann::json& j) {
  // Lenient on the wire: missing or mistyped fields fall back to defaults.
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; };
  auto num = [&](const char* k, int dflt) {
    return j.contains(k) && j[k].is_number_integer() ? j[k].get<int>() : dflt;
  };
  Diagnostic d;
  if (!j.is_object()) {
    d.message = "malformed diagnostic";
    return d;
  }
  d.file = str("file");
  d.line = num("line", 0);
  d.column = num("column", 0);
  d.length = num("length", 1);
  d.message = str("message");
  d.source_line = str("source_line");
  d.hint = str("hint");
  std::string sev = str("severity");
  d.severity = sev.empty() ? "error" : sev;
  return d;
}

}  // namespace air
