// Loading YAML safely: byte-level checks (size, NUL, UTF-8, control characters, flow nesting) before
// yaml-cpp runs, yaml-cpp's errors rephrased in our words, and conversion into YamlNode with a depth and
// node budget (aliases can refer to themselves or multiply content).
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <sstream>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/yaml/tree.h"

namespace air {

namespace {

struct LineCol {
  int line = 1;
  int column = 1;
};

LineCol line_col_at(std::string_view text, size_t offset) {
  LineCol lc;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++lc.line;
      lc.column = 1;
    } else {
      ++lc.column;
    }
  }
  return lc;
}

// Length of a valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not valid UTF-8.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned int cp = 0;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return n;
}

// Many bytes that are neither printable ASCII nor whitespace in the first KiB: not a text file.
bool looks_binary(std::string_view t) {
  size_t n = std::min<size_t>(t.size(), 1024), odd = 0;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(t[i]);
    odd += (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c >= 0x80;
  }
  return odd * 10 > n * 3;
}

// First byte-level problem: NUL (binary file), invalid UTF-8, or a control character YAML forbids.
bool check_bytes(const std::vector<YamlSource>& sources, int index, DiagnosticSink& sink) {
  const std::string& t = sources[index].text;
  for (size_t i = 0; i < t.size();) {
    unsigned char c = static_cast<unsigned char>(t[i]);
    LineCol lc;
    if (c == 0) {
      lc = line_col_at(t, i);
      sink.add_unlocated(sources[index].name,
                         fmt::format("this is not a YAML text file: it contains a NUL byte (line {}, column {})",
                                     lc.line, lc.column),
                         "pass the workload YAML file (UTF-8 text)");
      return false;
    }
    size_t n = utf8_sequence_length(t, i);
    if (n == 0 && looks_binary(t)) {
      lc = line_col_at(t, i);
      sink.add_unlocated(sources[index].name,
                         fmt::format("this is not a YAML text file: it looks binary (first invalid UTF-8 byte "
                                     "0x{:02X} at line {}, column {})",
                                     c, lc.line, lc.column),
                         "pass the workload YAML file");
      return false;
    }
    if (n == 0) {
      lc = line_col_at(t, i);
      sink.add({index, lc.line, lc.column}, 1, fmt::format("invalid UTF-8: byte 0x{:02X} is not valid here", c),
               "save the file as UTF-8");
      return false;
    }
    if (n == 1 && c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      lc = line_col_at(t, i);
      sink.add({index, lc.line, lc.column}, 1,
               fmt::format("control character U+{:04X} is not allowed in YAML", static_cast<int>(c)),
               "remove it; only tab, newline and carriage return may appear");
      return false;
    }
    if (c == 0x7F) {
      lc = line_col_at(t, i);
      sink.add({index, lc.line, lc.column}, 1, "control character U+007F is not allowed in YAML", "remove it");
      return false;
    }
    i += n;
  }
  return true;
}

// yaml-cpp parses nesting recursively, so bound the flow nesting ([ and {) before it runs. Block
// nesting needs indentation, which costs bytes per level; yaml-cpp's own depth guard and our conversion
// limit cover it.
bool check_flow_depth(const std::vector<YamlSource>& sources, int index, DiagnosticSink& sink, int max_depth) {
  const std::string& t = sources[index].text;
  int depth = 0;
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '\n') {
      comment = false;
      continue;
    }
    if (comment) continue;
    if (quote) {
      if (quote == '"' && c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    bool token_start = i == 0 || t[i - 1] == ' ' || t[i - 1] == '\t' || t[i - 1] == '\n' ||
                       t[i - 1] == '[' || t[i - 1] == '{' || t[i - 1] == ',' || t[i - 1] == ':';
    if (c == '#' && (i == 0 || t[i - 1] == ' ' || t[i - 1] == '\t' || t[i - 1] == '\n')) comment = true;
    else if ((c == '"' || c == '\'') && token_start) quote = c;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        LineCol lc = line_col_at(t, i);
        sink.add({index, lc.line, lc.column}, 1,
                 fmt::format("nesting is deeper than {} levels", max_depth),
                 "a workload needs only a few levels; check for runaway brackets");
        return false;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

int leading_spaces(const std::string& line) {
  int n = 0;
  while (n < static_cast<int>(line.size()) && line[n] == ' ') ++n;
  return n;
}

bool blank_or_comment(const std::string& line) {
  size_t i = line.find_first_not_of(" \t\r");
  return i == std::string::npos || line[i] == '#';
}

// yaml-cpp reports tabs and bad indentation as "illegal map value" (or similar) somewhere after the
// culprit. Look at the lines up to the error to name the real cause.
bool explain_by_indentation(const YamlSource& src, int index, int error_line, DiagnosticSink& sink) {
  for (int l = 1; l <= error_line; ++l) {
    std::string line = src.line_text(l);
    size_t ws = line.find_first_not_of(" \t");
    size_t tab = line.find('\t');
    if (tab != std::string::npos && (ws == std::string::npos || tab < ws) && !blank_or_comment(line)) {
      sink.add({index, l, static_cast<int>(tab) + 1}, 1, "tab character in indentation",
               "YAML indents with spaces only; replace the tab with spaces");
      return true;
    }
  }
  std::string line = src.line_text(error_line);
  if (blank_or_comment(line)) return false;
  int prev = error_line - 1;
  while (prev >= 1 && blank_or_comment(src.line_text(prev))) --prev;
  if (prev < 1) return false;
  std::string prev_line = src.line_text(prev);
  std::string trimmed = prev_line.substr(0, prev_line.find_last_not_of(" \r") + 1);
  bool opens_block = !trimmed.empty() && (trimmed.back() == ':' || trimmed.back() == '|' ||
                                          trimmed.back() == '>' || trimmed.back() == '-');
  if (leading_spaces(line) > leading_spaces(prev_line) && !opens_block) {
    int col = leading_spaces(line) + 1;
    sink.add({index, error_line, col}, 0,
             fmt::format("unexpected indentation: this line is indented more than line {} but nothing there "
                         "opens a nested block",
                         prev),
             fmt::format("indent it by {} spaces like the line before, or end the line before with ':'",
                         leading_spaces(prev_line)));
    return true;
  }
  return false;
}

// The last '[' or '{' still open at byte `end`, skipping quoted text and comments.
std::optional<YamlPos> unclosed_bracket(const std::string& t, int end, int index) {
  std::vector<size_t> open;
  char quote = 0;
  bool comment = false;
  size_t stop = std::min(t.size(), static_cast<size_t>(std::max(end, 0)));
  for (size_t i = 0; i < stop; ++i) {
    char c = t[i];
    if (c == '\n') comment = false;
    if (comment) continue;
    if (quote) {
      if (quote == '"' && c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '#' && (i == 0 || t[i - 1] == ' ' || t[i - 1] == '\n')) comment = true;
    else if ((c == '"' || c == '\'') && (i == 0 || std::string_view(" \t\n[{,:").find(t[i - 1]) != std::string_view::npos)) quote = c;
    else if (c == '[' || c == '{') open.push_back(i);
    else if ((c == ']' || c == '}') && !open.empty()) open.pop_back();
  }
  if (open.empty()) return std::nullopt;
  LineCol lc = line_col_at(t, open.back());
  return YamlPos{index, lc.line, lc.column};
}

void report_parser_error(const std::vector<YamlSource>& sources, int index, const YAML::ParserException& e,
                         DiagnosticSink& sink) {
  const YamlSource& src = sources[index];
  int line = e.mark.line >= 0 ? e.mark.line + 1 : 1;
  int col = e.mark.column >= 0 ? e.mark.column + 1 : 1;
  const std::string& m = e.msg;
  if (explain_by_indentation(src, index, line, sink)) return;
  YamlPos pos{index, line, col};
  auto starts = [&](const char* p) { return m.rfind(p, 0) == 0; };
  if (starts("illegal map value")) {
    sink.add(pos, 0, "unexpected ':' here: a mapping value is not allowed in this position",
             "if the value itself contains ': ', put it in quotes");
  } else if (starts("end of sequence flow not found") || starts("end of map flow not found")) {
    bool seq = starts("end of sequence flow not found");
    YamlPos open = unclosed_bracket(src.text, e.mark.pos, index).value_or(pos);
    sink.add(open, 1, fmt::format("this '{}' is never closed", seq ? '[' : '{'),
             seq ? "close the list with ']' (or add the missing ',')" : "close the mapping with '}' (or add the missing ',')");
  } else if (starts("end of map not found") || starts("end of sequence not found")) {
    sink.add(pos, 0, "this line does not fit the block above it: expected a key of the same mapping or "
                     "a '- ' item of the same list",
             "check the indentation of this line against the lines above it");
  } else if (starts("unknown escape character: ")) {
    sink.add(pos, 0, fmt::format("unknown escape sequence '\\{}' in a double-quoted string", m.substr(26)),
             "use single quotes, or write '\\\\' for a backslash");
  } else if (starts("the referenced anchor is not defined")) {
    sink.add(pos, 0, "alias refers to an anchor that is not defined before it",
             "define the anchor ('&name') before using the alias ('*name')");
  } else if (starts("illegal EOF in scalar")) {
    sink.add(pos, 1, "the file ends inside a quoted string", "add the closing quote");
  } else if (starts("illegal block entry")) {
    sink.add(pos, 1, "a '- ' list item is not allowed here", "check its indentation, or quote a value "
                                                              "that starts with '-'");
  } else if (starts("illegal flow end")) {
    sink.add(pos, 1, "closing bracket with no matching opening bracket", "remove it or add the opening one");
  } else if (starts("unknown token")) {
    sink.add(pos, 1, "unexpected character: it cannot start a YAML value here",
             "quote the value if it starts with a special character (@, `, %, |, >)");
  } else {
    sink.add(pos, 1, "invalid YAML: " + m, "");
  }
}

// Counts documents (and where the second starts) without building anything.
struct DocumentCounter : YAML::EventHandler {
  int documents = 0;
  YAML::Mark second;
  void OnDocumentStart(const YAML::Mark& m) override {
    if (documents++ == 1) second = m;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

void report_second_document(const std::vector<YamlSource>& sources, int index, const YAML::Mark& m,
                            DiagnosticSink& sink) {
  const YamlSource& src = sources[index];
  size_t pos = m.pos >= 0 ? static_cast<size_t>(m.pos) : 0;
  if (pos < src.text.size() && src.text[pos] == ',') {
    sink.add({index, m.line + 1, m.column + 1}, 1, "unexpected ',' outside a '[...]' or '{...}' collection",
             "remove it, or quote a value that starts with ','");
    return;
  }
  // Point at the '---' that starts the second document.
  int line = m.line + 1;
  for (int l = line; l >= 1; --l) {
    if (src.line_text(l).rfind("---", 0) == 0) {
      line = l;
      break;
    }
  }
  sink.add({index, line, 1}, 3, "the file holds more than one YAML document; a workload is a single document",
           "remove the '---' separator and the documents after the first");
}

class Converter {
 public:
  Converter(int source, const YamlLimits& limits, DiagnosticSink& sink)
      : source_(source), limits_(limits), sink_(sink) {}

  bool convert(const YAML::Node& in, YamlNode& out, int depth) {
    if (failed_) return false;
    if (++nodes_ > limits_.max_nodes) {
      fail(in, fmt::format("the document expands to more than {} values (aliases repeat content)",
                           limits_.max_nodes),
           "a workload is far smaller; avoid aliases that multiply content");
      return false;
    }
    if (depth > limits_.max_depth) {
      fail(in, fmt::format("nesting is deeper than {} levels", limits_.max_depth),
           "a workload needs only a few levels (an alias that refers to itself also nests forever)");
      return false;
    }
    const YAML::Mark m = in.Mark();
    out.pos = {source_, m.line + 1, m.column + 1};
    switch (in.Type()) {
      case YAML::NodeType::Scalar: {
        out.kind = YamlNode::Kind::kScalar;
        out.scalar = in.Scalar();
        const std::string& tag = in.Tag();
        out.plain = tag == "?" || tag.empty();
        if (tag != "?" && tag != "!" && tag != "tag:yaml.org,2002:str" && !tag.empty()) out.tag = tag;
        return true;
      }
      case YAML::NodeType::Sequence:
        out.kind = YamlNode::Kind::kSequence;
        for (const auto& item : in) {
          out.items.emplace_back();
          if (!convert(item, out.items.back(), depth + 1)) return false;
        }
        return true;
      case YAML::NodeType::Map:
        out.kind = YamlNode::Kind::kMapping;
        for (auto it = in.begin(); it != in.end(); ++it) {
          out.entries.emplace_back();
          auto& [k, v] = out.entries.back();
          if (!convert(it->first, k, depth + 1) || !convert(it->second, v, depth + 1)) return false;
          // A null value's mark lies on the next line; point at its key instead.
          if (v.is_null()) v.pos = k.pos;
        }
        return true;
      default:
        out.kind = YamlNode::Kind::kNull;
        return true;
    }
  }

 private:
  void fail(const YAML::Node& at, std::string message, std::string hint) {
    failed_ = true;
    const YAML::Mark m = at.Mark();
    sink_.add({source_, m.line + 1, m.column + 1}, 1, std::move(message), std::move(hint));
  }

  int source_;
  const YamlLimits& limits_;
  DiagnosticSink& sink_;
  size_t nodes_ = 0;
  bool failed_ = false;
};

// True when every line is blank or a comment: a stream of no documents.
bool only_comments(const std::string& text) {
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    size_t end = nl == std::string::npos ? text.size() : nl;
    size_t c = text.find_first_not_of(" \t\r", at);
    if (c < end && text[c] != '#') return false;
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return true;
}

// False only when the text can hold one document at most: no line starts with a document marker or a
// directive ('---', '...', '%'), and the
// first line with content is a block mapping's `key:` (after a top-level flow collection or scalar, stray
// text such as a ',' starts a second document with no marker).
bool may_hold_two_documents(const std::string& text) {
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    size_t end = nl == std::string::npos ? text.size() : nl;
    size_t c = text.find_first_not_of(" \t\r", at);
    if (c < end && text[c] != '#') {
      if (c != at) return true;  // an indented first line
      size_t k = c;
      while (k < end && (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '_' || text[k] == '-')) ++k;
      if (k == c || k >= end || text[k] != ':' || (k + 1 < end && text[k + 1] != ' ' && text[k + 1] != '\r')) return true;
      break;
    }
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  for (size_t at = 0; at < text.size();) {
    if (text.compare(at, 3, "---") == 0 || text.compare(at, 3, "...") == 0 || text.compare(at, 1, "%") == 0) return true;
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return false;
}

}  // namespace

std::optional<YamlNode> load_yaml(const std::vector<YamlSource>& sources, int index, DiagnosticSink& sink,
                                  const YamlLimits& limits) {
  const YamlSource& src = sources[index];
  if (src.text.size() > limits.max_bytes) {
    sink.add_unlocated(src.name,
                       fmt::format("file is {} bytes, over the {} KiB limit for a workload file",
                                   src.text.size(), limits.max_bytes / 1024),
                       "keep data and large settings in files under code_source, not in the YAML");
    return std::nullopt;
  }
  if (!check_bytes(sources, index, sink)) return std::nullopt;
  if (!check_flow_depth(sources, index, sink, limits.max_depth)) return std::nullopt;
  YAML::Node doc;
  DocumentCounter counter;
  try {
    // YAML::LoadAll loops forever on a stray top-level ',' (yaml-cpp 0.7): count at most two documents
    // with a bounded loop instead, then build only the first. A second document needs a marker ('---' or
    // '...') at the start of a line; without one the counting pass (2/3 of a dry-run's time) is skipped.
    if (may_hold_two_documents(src.text)) {
      std::istringstream in(src.text);
      YAML::Parser parser(in);
      for (int i = 0; i < 2 && parser.HandleNextDocument(counter); ++i) {
      }
      if (counter.documents > 1) {
        report_second_document(sources, index, counter.second, sink);
        return std::nullopt;
      }
    } else {
      counter.documents = only_comments(src.text) ? 0 : 1;
    }
    doc = YAML::Load(src.text);
  } catch (const YAML::DeepRecursion& e) {
    sink.add({index, e.mark.line + 1, e.mark.column + 1}, 1,
             fmt::format("nesting is deeper than {} levels", limits.max_depth),
             "a workload needs only a few levels");
    return std::nullopt;
  } catch (const YAML::ParserException& e) {
    report_parser_error(sources, index, e, sink);
    return std::nullopt;
  } catch (const std::exception& e) {
    sink.add_unlocated(src.name, "could not read the YAML: internal parser failure", "");
    return std::nullopt;
  }
  if (counter.documents == 0) return YamlNode{};
  YamlNode root;
  Converter conv(index, limits, sink);
  if (!conv.convert(doc, root, 0)) return std::nullopt;
  return root;
}

}  // namespace air
