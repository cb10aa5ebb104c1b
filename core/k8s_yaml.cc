// JSON objects as YAML documents for `kubectl apply -f -`. Written by hand rather than with yaml-cpp's
// emitter so that the quoting is ours: every string is quoted (an env value "1" or "true" must stay a
// string), and a multi-line string (the agent's script) stays readable as a literal block.
#include <cctype>
#include <string>

#include "core/k8s_manifest.h"

namespace air {

namespace {

using nlohmann::json;

bool plain_key(const std::string& k) {
  if (k.empty() || k == "true" || k == "false" || k == "null" || k == "yes" || k == "no" || k == "on" || k == "off" ||
      k == "y" || k == "n" || k == "~")
    return false;
  if (!std::isalpha(static_cast<unsigned char>(k[0]))) return false;
  for (char c : k) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '/' && c != '-' && c != '_') return false;
  }
  return true;
}

std::string key_text(const std::string& k) { return plain_key(k) ? k : json(k).dump(-1, ' ', false, json::error_handler_t::replace); }

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
  } else {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";  // JSON's double-quoted strings, numbers, true/false/null are valid YAML
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
