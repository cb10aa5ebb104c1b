// Overrides edit the YamlNode tree in place; nodes they bring in carry the override's source index, so
// errors about them point at the argument while errors about untouched keys still point into the file.
#include "core/workload/override.h"

#include <fmt/format.h>

#include "core/base/edit_distance.h"
#include "core/workload/keys.h"

namespace air {

namespace {

std::string short_text(const YamlNode& n) {
  if (n.is_scalar()) return n.plain ? n.scalar : "\"" + n.scalar + "\"";
  if (n.is_null()) return "null";
  std::string s = emit_yaml(n);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  for (auto& c : s) {
    if (c == '\n') c = ' ';
  }
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

struct Part {
  std::string name;
  int column;  // 1-based, in the argument
};

class Applier {
 public:
  Applier(YamlNode& root, std::vector<YamlSource>& sources, DiagnosticSink& sink)
      : root_(root), sources_(sources), sink_(sink) {}

  std::string apply(const std::string& arg) {
    index_ = static_cast<int>(sources_.size());
    YamlSource src;
    src.name = "--override";
    src.display = arg;
    sources_.push_back(src);
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      std::string hint = "for example --override compute.num_accelerators=32";
      if (arg.size() > 5 && (arg.ends_with(".yaml") || arg.ends_with(".yml")))
        hint = "to choose the workload file use -f; --override takes KEY=VALUE";
      sink_.add({index_, 1, 1}, static_cast<int>(arg.size()), "invalid --override: expected KEY=VALUE", hint);
      return {};
    }
    // Spaces around the key are dropped, as the reference does: "timeout_minutes = 45" sets timeout_minutes.
    size_t lead = arg.find_first_not_of(" \t");
    if (eq == 0 || lead >= eq) {
      sink_.add({index_, 1, 1}, 1, "invalid --override: the key before '=' is empty",
                "for example --override compute.num_accelerators=32");
      return {};
    }
    std::vector<Part> parts;
    size_t start = 0;
    std::string path = arg.substr(lead, arg.find_last_not_of(" \t", eq - 1) + 1 - lead);
    while (true) {
      size_t dot = path.find('.', start);
      std::string name = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (name.empty()) {
        sink_.add({index_, 1, static_cast<int>(lead + start) + 1}, 1, "invalid --override: empty part in the key path");
        return {};
      }
      parts.push_back({name, static_cast<int>(lead + start) + 1});
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    // The value is parsed in place: padding keeps its columns those of the whole argument.
    std::string value = arg.substr(eq + 1);
    bool one_line = value.find('\n') == std::string::npos;
    sources_[static_cast<size_t>(index_)].text = one_line ? std::string(eq + 1, ' ') + value : value;
    if (!one_line) sources_[static_cast<size_t>(index_)].display.clear();
    if (!check_path(parts)) return {};
    auto node = load_yaml(sources_, index_, sink_);
    if (!node) return {};
    report_duplicate_keys(*node, sink_);
    return set(parts, std::move(*node), path);
  }

 private:
  bool check_path(const std::vector<Part>& parts) {
    const FieldSpec* cur = &workload_schema();
    std::string walked;
    for (size_t i = 0; i < parts.size(); ++i) {
      const Part& p = parts[i];
      int len = static_cast<int>(p.name.size());
      if (cur->type == FieldType::kFreeMap) return true;
      if (cur->type == FieldType::kScalarMap) {
        if (i + 1 == parts.size()) return true;
        sink_.add({index_, 1, parts[i + 1].column}, static_cast<int>(parts[i + 1].name.size()),
                  fmt::format("'{}.{}' is a single value, not a nested object", walked, p.name));
        return false;
      }
      if (cur->type != FieldType::kObject) {
        std::string msg = cur->type == FieldType::kObjectList
                              ? fmt::format("'{}' is a list; override the whole list instead of its items", walked)
                              : fmt::format("'{}' is a {}, not a nested object", walked, type_name(cur->type));
        sink_.add({index_, 1, p.column}, len, msg);
        return false;
      }
      const FieldSpec* next = nullptr;
      for (const auto& c : cur->children) {
        if (c.name == p.name) next = &c;
      }
      if (!next) {
        std::string guess = closest_match(p.name, child_names(*cur));
        std::string all;
        for (const auto& n : child_names(*cur)) all += (all.empty() ? "" : ", ") + n;
        std::string hint = guess.empty() ? "fields here: " + all : fmt::format("did you mean '{}'?", guess);
        std::string full = walked.empty() ? p.name : walked + "." + p.name;
        sink_.add({index_, 1, p.column}, len, fmt::format("invalid --override: unknown field '{}'", full), hint);
        return false;
      }
      walked = walked.empty() ? p.name : walked + "." + p.name;
      cur = next;
    }
    return true;
  }

  std::string set(const std::vector<Part>& parts, YamlNode value, const std::string& path) {
    YamlNode* cur = &root_;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!cur->is_mapping()) {
        *cur = YamlNode{};
        cur->kind = YamlNode::Kind::kMapping;
        cur->pos = {index_, 1, parts[i].column};
      }
      YamlNode* child = cur->find(parts[i].name);
      if (!child) {
        YamlNode key;
        key.kind = YamlNode::Kind::kScalar;
        key.scalar = parts[i].name;
        key.pos = {index_, 1, parts[i].column};
        YamlNode empty;
        empty.pos = key.pos;
        cur->entries.push_back(YamlEntry{std::move(key), std::move(empty)});
        child = &cur->entries.back().second;
        if (i + 1 == parts.size()) {
          std::string note = fmt::format("Override: setting {} to {}", path, short_text(value));
          *child = std::move(value);
          return note;
        }
      } else if (i + 1 == parts.size()) {
        std::string note = fmt::format("Override: changing {} from {} to {}", path, short_text(*child),
                                       short_text(value));
        *child = std::move(value);
        return note;
      }
      cur = child;
    }
    return {};
  }

  YamlNode& root_;
  std::vector<YamlSource>& sources_;
  DiagnosticSink& sink_;
  int index_ = 0;
};

}  // namespace

std::vector<std::string> apply_overrides(YamlNode& root, std::vector<YamlSource>& sources,
                                         const std::vector<std::string>& overrides, DiagnosticSink& sink) {
  std::vector<std::string> notes;
  Applier applier(root, sources, sink);
  for (const auto& arg : overrides) {
    std::string note = applier.apply(arg);
    if (!note.empty()) notes.push_back(note);
  }
  return notes;
}

}  // namespace air
