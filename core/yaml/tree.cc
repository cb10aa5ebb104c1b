// YamlNode helpers, the diagnostic sink (source lines, character columns, caret widths), duplicate keys,
// and emitting a tree back to YAML text.
#include "core/yaml/tree.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

namespace air {

const YamlNode* YamlNode::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.is_scalar() && k.scalar == key) return &v;
  }
  return nullptr;
}

YamlNode* YamlNode::find(std::string_view key) {
  return const_cast<YamlNode*>(static_cast<const YamlNode*>(this)->find(key));
}

bool yaml_int_text(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool yaml_float_text(std::string_view s) {
  if (s == ".inf" || s == "-.inf" || s == "+.inf" || s == ".nan" || s == ".Inf" || s == ".NaN") return true;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  bool digits = false, dot = false, exp = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) digits = true;
    else if (c == '.' && !dot && !exp) dot = true;
    else if ((c == 'e' || c == 'E') && digits && !exp) {
      exp = true;
      if (i + 1 < s.size() && (s[i + 1] == '-' || s[i + 1] == '+')) ++i;
      if (i + 1 >= s.size()) return false;
    } else {
      return false;
    }
  }
  return digits && (dot || exp);
}

bool yaml_bool_text(std::string_view s) {
  std::string l(s);
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l == "true" || l == "false" || l == "yes" || l == "no" || l == "on" || l == "off";
}

std::string describe_node(const YamlNode& n) {
  switch (n.kind) {
    case YamlNode::Kind::kNull: return "nothing (null)";
    case YamlNode::Kind::kSequence: return "a list";
    case YamlNode::Kind::kMapping: return "a mapping";
    case YamlNode::Kind::kScalar: break;
  }
  std::string text = n.scalar.size() > 40 ? n.scalar.substr(0, 37) + "..." : n.scalar;
  auto nl = text.find('\n');
  if (nl != std::string::npos) text = text.substr(0, nl) + "...";
  if (!n.plain) return fmt::format("the quoted string \"{}\"", text);
  if (yaml_int_text(n.scalar)) return "the integer " + text;
  if (yaml_float_text(n.scalar)) return "the number " + text;
  if (yaml_bool_text(n.scalar)) return "the boolean " + text;
  return fmt::format("the string '{}'", text);
}

std::string YamlSource::line_text(int line) const {
  if (!display.empty() && line == 1) return display;
  size_t start = 0;
  for (int l = 1; l < line; ++l) {
    start = text.find('\n', start);
    if (start == std::string::npos) return {};
    ++start;
  }
  if (start > text.size()) return {};
  size_t end = text.find('\n', start);
  std::string s = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

namespace {

int code_points(std::string_view s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// How many bytes of the token at `at` to underline when the caller did not say.
size_t guess_length(const std::string& line, size_t at) {
  if (at >= line.size()) return 1;
  char q = line[at];
  if (q == '"' || q == '\'') {
    for (size_t i = at + 1; i < line.size(); ++i) {
      if (q == '"' && line[i] == '\\') { ++i; continue; }
      if (line[i] == q) return i - at + 1;
    }
    return line.size() - at;
  }
  bool in_flow = line.find_first_of("[{") < at;
  size_t i = at;
  for (; i < line.size(); ++i) {
    char c = line[i];
    if (c == ':' && (i + 1 == line.size() || line[i + 1] == ' ')) break;
    if (c == '#' && i > at && line[i - 1] == ' ') break;
    if (in_flow && (c == ',' || c == ']' || c == '}')) break;
  }
  while (i > at && (line[i - 1] == ' ' || line[i - 1] == '\t')) --i;
  return std::max<size_t>(1, i - at);
}

}  // namespace

void DiagnosticSink::add(const YamlPos& pos, int length, std::string message, std::string hint,
                         std::string severity) {
  Diagnostic d;
  const YamlSource& src = (*sources_)[static_cast<size_t>(pos.source)];
  d.file = src.name;
  d.line = pos.line;
  d.message = std::move(message);
  d.hint = std::move(hint);
  d.severity = std::move(severity);
  d.source_line = src.line_text(pos.line);
  size_t byte_col = static_cast<size_t>(std::max(pos.column, 1) - 1);
  if (!src.display.empty() && pos.line == 1) byte_col += static_cast<size_t>(src.column_offset);
  byte_col = std::min(byte_col, d.source_line.size());
  size_t len = length > 0 ? static_cast<size_t>(length) : guess_length(d.source_line, byte_col);
  len = std::max<size_t>(1, std::min(len, d.source_line.size() > byte_col ? d.source_line.size() - byte_col : 1));
  d.column = code_points(std::string_view(d.source_line).substr(0, byte_col)) + 1;
  d.length = byte_col < d.source_line.size()
                 ? std::max(1, code_points(std::string_view(d.source_line).substr(byte_col, len)))
                 : 1;
  diagnostics_.push_back(std::move(d));
}

void DiagnosticSink::add_unlocated(const std::string& file, std::string message, std::string hint) {
  Diagnostic d;
  d.file = file;
  d.message = std::move(message);
  d.hint = std::move(hint);
  diagnostics_.push_back(std::move(d));
}

size_t DiagnosticSink::error_count() const {
  return static_cast<size_t>(std::count_if(diagnostics_.begin(), diagnostics_.end(),
                                           [](const Diagnostic& d) { return d.severity == "error"; }));
}

void report_duplicate_keys(const YamlNode& n, DiagnosticSink& sink) {
  if (n.is_mapping()) {
    std::map<std::string, const YamlNode*> seen;
    for (const auto& [k, v] : n.entries) {
      if (!k.is_scalar()) continue;
      auto [it, inserted] = seen.emplace(k.scalar, &k);
      if (!inserted) {
        sink.add(k.pos, static_cast<int>(k.scalar.size()),
                 fmt::format("duplicate key '{}' (first defined at line {})", k.scalar, it->second->pos.line),
                 "keys must be unique within a mapping; remove or merge one of them");
      }
    }
    for (const auto& [k, v] : n.entries) report_duplicate_keys(v, sink);
  } else if (n.is_sequence()) {
    for (const auto& item : n.items) report_duplicate_keys(item, sink);
  }
}

namespace {

void emit_node(YAML::Emitter& e, const YamlNode& n) {
  switch (n.kind) {
    case YamlNode::Kind::kNull: e << YAML::Null; break;
    case YamlNode::Kind::kScalar:
      if (n.scalar.find('\n') != std::string::npos) e << YAML::Literal << n.scalar;
      else if (!n.plain) e << YAML::DoubleQuoted << n.scalar;
      else e << n.scalar;
      break;
    case YamlNode::Kind::kSequence:
      e << YAML::BeginSeq;
      for (const auto& item : n.items) emit_node(e, item);
      e << YAML::EndSeq;
      break;
    case YamlNode::Kind::kMapping:
      e << YAML::BeginMap;
      for (const auto& [k, v] : n.entries) {
        e << YAML::Key;
        emit_node(e, k);
        e << YAML::Value;
        emit_node(e, v);
      }
      e << YAML::EndMap;
      break;
  }
}

}  // namespace

std::string emit_yaml(const YamlNode& n) {
  YAML::Emitter e;
  emit_node(e, n);
  std::string s = e.c_str();
  if (!s.empty() && s.back() != '\n') s += '\n';
  return s;
}

}  // namespace air
