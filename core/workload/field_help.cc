// `air run -h config.<path>`: help for one field of the workload YAML, from the parser's own key table.
#include <fmt/format.h>

#include "core/base/edit_distance.h"
#include "core/base/error.h"
#include "core/workload/keys.h"

namespace air {

namespace {

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string describe_children(const FieldSpec& f) {
  std::string out;
  size_t width = 0;
  for (const auto& c : f.children) width = std::max(width, c.name.size());
  for (const auto& c : f.children) {
    out += fmt::format("  {:<{}}  {}{}\n", c.name, width, type_name(c.type), c.required ? ", required" : "");
  }
  return out;
}

// Walks the path, throwing a usage error at the first part that does not exist.
const FieldSpec& resolve(std::string_view path) {
  const FieldSpec* cur = &workload_schema();
  std::string walked = "config";
  size_t start = 0;
  while (start <= path.size() && !path.empty()) {
    size_t dot = path.find('.', start);
    std::string part(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (cur->type == FieldType::kScalarMap || cur->type == FieldType::kFreeMap) {
      throw usage_error(fmt::format("'{}' holds user-defined keys; there is no help for '{}' below it", walked, part),
                        fmt::format("run 'air run -h {}' for what it holds", walked));
    }
    if (cur->children.empty()) {
      throw usage_error(fmt::format("'{}' is a {}, not an object with fields", walked, type_name(cur->type)));
    }
    const FieldSpec* next = nullptr;
    for (const auto& c : cur->children) {
      if (c.name == part) next = &c;
    }
    if (!next) {
      std::string guess = closest_match(part, child_names(*cur));
      std::string hint = guess.empty() ? "" : fmt::format("did you mean '{}.{}'? ", walked, guess);
      throw usage_error(fmt::format("unknown config field '{}.{}'", walked, part),
                        hint + "fields of '" + walked + "': " + join(child_names(*cur), ", "));
    }
    cur = next;
    walked += "." + part;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return *cur;
}

}  // namespace

std::string field_help(std::string_view path) {
  if (path == "config") path = "";
  else if (path.rfind("config.", 0) == 0) path.remove_prefix(7);
  const FieldSpec& f = resolve(path);
  if (f.path.empty()) {
    return "config: the workload YAML (air run -f FILE). Top-level keys:\n" + describe_children(f) +
           "Run 'air run -h config.<key>' for one of them; docs/workload.md has the whole schema.\n";
  }
  std::string out = fmt::format("config.{}\n", f.path);
  out += fmt::format("  type:        {}\n", type_name(f.type));
  std::string parent = f.path.find('.') == std::string::npos ? "" : f.path.substr(0, f.path.rfind('.'));
  std::string req = !f.required ? "no" : parent.empty() ? "yes" : fmt::format("yes, when '{}' is set", parent);
  out += fmt::format("  required:    {}\n", req);
  if (!f.default_value.empty()) out += fmt::format("  default:     {}\n", f.default_value);
  if (!f.allowed.empty()) out += fmt::format("  allowed:     {}\n", join(f.allowed, ", "));
  out += fmt::format("  description: {}\n", f.description);
  if (!f.children.empty()) out += "  fields:\n" + describe_children(f);
  return out;
}

}  // namespace air
