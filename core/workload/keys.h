// The key table of the workload YAML: every key with its type, whether it is required, its default,
// allowed values and a description. The parser, --override, `air run -h config.<path>` and the test that
// keeps schemas/workload.schema.json in step all read this one table.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace air {

enum class FieldType {
  kString,          // any scalar, kept as text
  kInteger,         // a plain whole number
  kNumber,          // a plain number, fractions allowed (stall_timeout_minutes)
  kStringOrInteger, // a scalar (environment.version)
  kBoolOrString,    // git.remote
  kObject,          // a mapping with the listed children only
  kStringList,      // a list of strings
  kObjectList,      // a list of mappings with the listed children (permissions)
  kScalarMap,       // NAME: scalar (env_variables, secrets): any key, values become strings
  kFreeMap,         // anything below (parameters)
};

struct FieldSpec {
  std::string name;  // "accelerator_type"
  std::string path;  // "compute.accelerator_type"
  FieldType type = FieldType::kString;
  bool required = false;       // required when its parent is present
  std::string default_value;   // as text; empty when none
  std::vector<std::string> allowed;
  std::string description;
  std::vector<FieldSpec> children;  // kObject and kObjectList
};

// The root (an object whose children are the top-level keys).
const FieldSpec& workload_schema();
// A field by dotted path ("compute.accelerator_type"); nullptr if unknown. Paths below a kScalarMap or
// kFreeMap are not in the table.
const FieldSpec* find_field(std::string_view path);
// "string", "integer", "object", "list of strings", ...: for help and messages.
std::string type_name(FieldType t);
std::vector<std::string> child_names(const FieldSpec& f);
// Every path in the table, depth first ("experiment_name", "compute", "compute.accelerator_type", ...).
std::vector<const FieldSpec*> all_fields();

// `air run -h config.<path>` text for one field. Throws air::Error (exit 2) for an unknown path, with a
// did-you-mean hint and the list of valid fields at that level.
std::string field_help(std::string_view path);

}  // namespace air
