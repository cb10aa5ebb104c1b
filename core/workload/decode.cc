// The structural stage of the workload parser: every mapping checked against the key table (unknown keys
// with did-you-mean, missing required keys), every value against its type, all errors at once.
#include "core/workload/decode.h"

#include <climits>

#include <fmt/format.h>

#include "core/base/edit_distance.h"

namespace air {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

// Where a key with this name lives elsewhere in the table ("compute"), for "belongs under" hints.
std::string home_of(const std::string& name) {
  for (const FieldSpec* f : all_fields()) {
    if (f->name == name) {
      auto dot = f->path.rfind('.');
      return dot == std::string::npos ? "the top level" : "'" + f->path.substr(0, dot) + "'";
    }
  }
  return {};
}

const FieldSpec* find_child(const FieldSpec& spec, const std::string& name) {
  for (const auto& c : spec.children) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

int key_length(const YamlNode& k) {
  return k.is_scalar() && k.plain && k.scalar.find('\n') == std::string::npos ? static_cast<int>(k.scalar.size())
                                                                                : 0;
}

}  // namespace

void WorkloadDecoder::error(const YamlNode& at, std::string message, std::string hint, int length) {
  if (length == 0 && !at.is_scalar()) length = 1;
  sink_.add(at.pos, length, std::move(message), std::move(hint));
}

void WorkloadDecoder::error_key(Entry e, std::string message, std::string hint) {
  error(*e.key, std::move(message), std::move(hint), key_length(*e.key));
}

void WorkloadDecoder::unknown_key(const YamlNode& key, const FieldSpec& spec, const std::string& where) {
  std::string msg = where.empty() ? fmt::format("unknown top-level key '{}'", key.scalar)
                                  : fmt::format("unknown key '{}' in '{}'", key.scalar, where);
  std::string guess = closest_match(key.scalar, child_names(spec));
  std::string hint;
  if (!guess.empty()) {
    hint = fmt::format("did you mean '{}'?", guess);
  } else if (std::string home = home_of(key.scalar); !home.empty()) {
    hint = fmt::format("'{}' belongs under {}", key.scalar, home);
  } else {
    hint = fmt::format("valid keys {}: {}", where.empty() ? "at the top level" : "in '" + where + "'",
                       join(child_names(spec)));
  }
  error(key, std::move(msg), std::move(hint), key_length(key));
}

void WorkloadDecoder::check_structure(const YamlNode& n, const FieldSpec& spec, const YamlNode* key,
                                      const std::string& where) {
  if (n.is_null()) {
    bad_.insert(&n);
    std::string name = spec.path.empty() ? where : spec.path;
    error(key ? *key : n, fmt::format("'{}' has no value; expected {}", name, type_name(spec.type) == "object"
                                                                                  ? "a mapping"
                                                                                  : "a " + type_name(spec.type)),
          "give it a value or remove the key", key ? key_length(*key) : 1);
    return;
  }
  if (!n.tag.empty() && n.is_scalar()) {
    bad_.insert(&n);
    error(n, fmt::format("unsupported YAML tag '{}'", n.tag), "remove the tag; air reads plain values");
    return;
  }
  switch (spec.type) {
    case FieldType::kObject: check_object(n, spec, key, where); break;
    case FieldType::kString:
    case FieldType::kStringOrInteger:
    case FieldType::kBoolOrString: check_scalar(n, spec, key); break;
    case FieldType::kInteger: check_integer(n, spec); break;
    case FieldType::kNumber: check_number(n, spec); break;
    case FieldType::kStringList:
    case FieldType::kObjectList: check_list(n, spec, where); break;
    case FieldType::kScalarMap: check_scalar_map(n, spec); break;
    case FieldType::kFreeMap:
      if (!n.is_mapping()) {
        bad_.insert(&n);
        error(n, fmt::format("'{}' must be a mapping of names to values, found {}", spec.path, describe_node(n)),
              "write it as 'name: value' lines indented under the key");
      }
      break;
  }
}

void WorkloadDecoder::check_object(const YamlNode& n, const FieldSpec& spec, const YamlNode* key,
                                   const std::string& where) {
  if (!n.is_mapping()) {
    bad_.insert(&n);
    if (spec.path.empty()) {
      error(n, fmt::format("the top level must be a mapping of keys (experiment_name, compute, command, ...), "
                           "found {}",
                           describe_node(n)),
            "start the file with 'experiment_name: ...'");
    } else {
      error(n, fmt::format("'{}' must be a mapping with keys {}, found {}", where, join(child_names(spec)),
                           describe_node(n)),
            "indent its keys under it, one 'key: value' per line");
    }
    return;
  }
  for (const auto& [k, v] : n.entries) {
    if (!k.is_scalar()) {
      bad_.insert(&v);
      error(k, fmt::format("a key must be a plain name, found {}", describe_node(k)));
      continue;
    }
    const FieldSpec* child = find_child(spec, k.scalar);
    if (!child) {
      bad_.insert(&v);
      unknown_key(k, spec, where);
      continue;
    }
    check_structure(v, *child, &k, where.empty() ? child->name : where + "." + child->name);
  }
  // A misspelt key already got "did you mean"; do not also call the real one missing.
  std::set<std::string> misspelt;
  for (const auto& [k, v] : n.entries) {
    if (k.is_scalar() && !find_child(spec, k.scalar)) misspelt.insert(closest_match(k.scalar, child_names(spec)));
  }
  for (const auto& c : spec.children) {
    if (!c.required || n.find(c.name) || misspelt.count(c.name)) continue;
    std::string hint = c.allowed.empty() ? fmt::format("add '{}: <{}>'", c.name, type_name(c.type))
                                         : fmt::format("add '{}: {}'", c.name, c.allowed.front());
    if (spec.path.empty()) {
      sink_.add_unlocated(file_, fmt::format("missing required top-level key '{}'", c.name), hint);
    } else if (key) {
      error(*key, fmt::format("missing required key '{}' in '{}'", c.name, where), hint, key_length(*key));
    } else {
      error(n, fmt::format("missing required key '{}' in '{}'", c.name, where), hint, 1);
    }
  }
}

void WorkloadDecoder::check_scalar(const YamlNode& n, const FieldSpec& spec, const YamlNode* key) {
  if (n.is_scalar()) return;
  bad_.insert(&n);
  std::string expected = spec.type == FieldType::kString ? "a string" : "a " + type_name(spec.type);
  std::string hint = n.is_sequence() && spec.type == FieldType::kString && spec.name == "command"
                         ? "write a multi-line command as a block: 'command: |' followed by indented lines"
                         : "write a single value after the ':'";
  error(n, fmt::format("'{}' must be {}, found {}", spec.path, expected, describe_node(n)), hint);
}

void WorkloadDecoder::check_number(const YamlNode& n, const FieldSpec& spec) {
  if (n.is_scalar() && n.plain && (yaml_int_text(n.scalar) || yaml_float_text(n.scalar))) return;
  bad_.insert(&n);
  error(n, fmt::format("'{}' must be a number, found {}", spec.path, describe_node(n)),
        n.is_scalar() && !n.plain ? "remove the quotes" : "write a number such as 30 or 0.5");
}

void WorkloadDecoder::check_integer(const YamlNode& n, const FieldSpec& spec) {
  auto fail = [&](std::string msg, std::string hint) {
    bad_.insert(&n);
    error(n, std::move(msg), std::move(hint));
  };
  std::string expected = fmt::format("'{}' must be an integer", spec.path);
  if (!n.is_scalar()) return fail(fmt::format("{}, found {}", expected, describe_node(n)), "write a whole number");
  if (!n.plain && yaml_int_text(n.scalar))
    return fail(fmt::format("{}, found {}", expected, describe_node(n)), "remove the quotes");
  if (n.plain && yaml_float_text(n.scalar)) {
    return fail(fmt::format("{} (a whole number), found {}", expected, describe_node(n)),
                "air does not round numbers; write a whole number");
  }
  if (!n.plain || !yaml_int_text(n.scalar))
    return fail(fmt::format("{}, found {}", expected, describe_node(n)), "write a whole number such as 8");
  try {
    long long v = std::stoll(n.scalar);
    if (v > INT_MAX || v < INT_MIN) throw std::out_of_range("int");
  } catch (const std::exception&) {
    fail(fmt::format("'{}' is out of range: {}", spec.path, n.scalar), "use a value below 2147483648");
  }
}

void WorkloadDecoder::check_list(const YamlNode& n, const FieldSpec& spec, const std::string& where) {
  if (!n.is_sequence()) {
    bad_.insert(&n);
    std::string hint = n.is_scalar() ? fmt::format("write it as a list: '{}:' then '  - {}' on the next line",
                                                   spec.name, n.scalar.substr(0, n.scalar.find('\n')))
                                     : "write one '- item' per line under the key";
    error(n, fmt::format("'{}' must be a {}, found {}", where, type_name(spec.type), describe_node(n)), hint);
    return;
  }
  for (size_t i = 0; i < n.items.size(); ++i) {
    const YamlNode& item = n.items[i];
    std::string item_where = fmt::format("{}[{}]", where, i);
    if (spec.type == FieldType::kObjectList) {
      FieldSpec item_spec = spec;
      item_spec.type = FieldType::kObject;
      check_structure(item, item_spec, nullptr, item_where);
    } else if (!item.is_scalar()) {
      bad_.insert(&item);
      error(item, fmt::format("'{}' must be a string, found {}", item_where, describe_node(item)),
            item.is_mapping() ? "quote an item that contains ': '" : "");
    } else if (!item.tag.empty()) {
      bad_.insert(&item);
      error(item, fmt::format("unsupported YAML tag '{}'", item.tag), "remove the tag");
    }
  }
}

void WorkloadDecoder::check_scalar_map(const YamlNode& n, const FieldSpec& spec) {
  if (!n.is_mapping()) {
    bad_.insert(&n);
    error(n, fmt::format("'{}' must be a mapping of NAME: value, found {}", spec.path, describe_node(n)),
          "write one 'NAME: value' per line, indented under the key");
    return;
  }
  for (const auto& [k, v] : n.entries) {
    if (!k.is_scalar()) {
      bad_.insert(&v);
      error(k, fmt::format("a name in '{}' must be a plain name, found {}", spec.path, describe_node(k)));
    } else if (v.is_null()) {
      bad_.insert(&v);
      error(k, fmt::format("'{}.{}' has no value", spec.path, k.scalar),
            spec.name == "secrets" ? "write it as NAME: scope/key" : "write '\"\"' for an empty value",
            key_length(k));
    } else if (!v.is_scalar()) {
      bad_.insert(&v);
      error(v, fmt::format("'{}.{}' must be a single value, found {}", spec.path, k.scalar, describe_node(v)),
            "quote the value if it is meant as text");
    }
  }
}

WorkloadDecoder::Entry WorkloadDecoder::get(const YamlNode* map, std::string_view name) const {
  if (!map || !map->is_mapping() || bad_.count(map)) return {};
  for (const auto& [k, v] : map->entries) {
    if (k.is_scalar() && k.scalar == name) {
      if (bad_.count(&v)) return {};
      return {&k, &v};
    }
  }
  return {};
}

std::optional<std::string> WorkloadDecoder::text(Entry e) const {
  if (!e || !e.value->is_scalar()) return std::nullopt;
  return e.value->scalar;
}

std::optional<long long> WorkloadDecoder::integer(Entry e) const {
  if (!e || !e.value->is_scalar() || !yaml_int_text(e.value->scalar)) return std::nullopt;
  return std::stoll(e.value->scalar);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace air
