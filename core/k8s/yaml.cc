// JSON objects as YAML documents for `kubectl apply -f -`. Written by hand rather than with yaml-cpp's
// emitter so that the quoting is ours: a string that could read as anything else is double-quoted (an env
// value "1" or "yes" must stay a string), and a multi-line one (the agent's script) becomes a literal block.
#include <cctype>
#include <string>

#include "core/k8s/manifest.h"

namespace air {

namespace {

using nlohmann::json;

// Plain (unquoted) only when no YAML reader can take the text for anything but a string: it starts with a
// letter or '/', uses no indicator characters, and is none of YAML 1.1's boolean or null words (Kubernetes'
// YAML library still reads "yes", "on" and "off" as booleans).
bool plain_safe(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '/')) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '/' && c != '-' && c != '_') return false;
  }
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}) {
    if (lower == word) return false;
  }
  return true;
}

std::string quoted(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

std::string key_text(const std::string& k) { return plain_safe(k) ? k : quoted(k); }

// A literal block keeps a multi-line string byte for byte when it has no other control characters and its
// first line does not start with a space (which would need an indentation indicator).
bool literal_ok(const std::string& s) {
  if (s.find('\n') == std::string::npos || s[0] == ' ' || s[0] == '\n') return false;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

void literal_block(std::string& out, const std::string& s, int indent) {
  size_t trailing = 0;
  while (trailing < s.size() && s[s.size() - 1 - trailing] == '\n') ++trailing;
  out += trailing == 0 ? "|-\n" : trailing == 1 ? "|\n" : "|+\n";
  std::string body = s.substr(0, s.size() - trailing);
  size_t start = 0;
  while (true) {
    size_t nl = body.find('\n', start);
    std::string line = body.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    out += line.empty() ? "\n" : std::string(indent, ' ') + line + "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  for (size_t i = 1; i < trailing; ++i) out += "\n";
}

bool is_scalar(const json& v) { return !v.is_structured() || v.empty(); }

// A scalar after "key:" or "-"; the caller has written the separator space. Ends the line.
void scalar(std::string& out, const json& v, int indent) {
  if (v.is_object()) {
    out += "{}\n";
  } else if (v.is_array()) {
    out += "[]\n";
  } else if (v.is_string() && literal_ok(v.get_ref<const std::string&>())) {
    literal_block(out, v.get_ref<const std::string&>(), indent);
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    out += (plain_safe(s) ? s : quoted(s)) + "\n";
  } else {
    out += v.dump() + "\n";  // numbers, true, false and null are the same in JSON and YAML
  }
}

void mapping(std::string& out, const json& obj, int indent, bool first_inline);

void sequence(std::string& out, const json& arr, int indent) {
  for (const auto& item : arr) {
    out += std::string(indent, ' ') + "-";
    if (is_scalar(item)) {
      out += " ";
      scalar(out, item, indent + 2);
    } else if (item.is_object()) {
      out += " ";
      mapping(out, item, indent + 2, true);
    } else {
      out += "\n";
      sequence(out, item, indent + 2);
    }
  }
}

void mapping(std::string& out, const json& obj, int indent, bool first_inline) {
  bool first = true;
  for (const auto& [k, v] : obj.items()) {
    if (!(first && first_inline)) out += std::string(indent, ' ');
    first = false;
    out += key_text(k) + ":";
    if (is_scalar(v)) {
      out += " ";
      scalar(out, v, indent + 2);
    } else if (v.is_object()) {
      out += "\n";
      mapping(out, v, indent + 2, false);
    } else {
      out += "\n";
      sequence(out, v, indent + 2);
    }
  }
}

}  // namespace

std::string k8s_yaml_documents(const json& objects) {
  std::string out;
  for (const auto& o : objects) {
    out += "---\n";
    if (is_scalar(o)) {
      scalar(out, o, 0);
    } else if (o.is_object()) {
      mapping(out, o, 0, false);
    } else {
      sequence(out, o, 0);
    }
  }
  return out;
}

}  // namespace air
