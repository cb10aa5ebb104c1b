// Keeps schemas/workload.schema.json in step with the parser's key table (core/workload/keys.cc): the same
// keys at every level, the same types, required keys, allowed values and defaults. Also checks field help.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/workload/keys.h"

using nlohmann::json;

namespace {

json load_schema() {
  std::ifstream in(std::string(AIR_TEST_DATA_DIR) + "/../schemas/workload.schema.json");
  REQUIRE(in);
  return json::parse(in);
}

json expected_type(air::FieldType t) {
  using T = air::FieldType;
  switch (t) {
    case T::kString: return "string";
    case T::kInteger: return "integer";
    case T::kNumber: return "number";
    case T::kStringOrInteger: return json::array({"string", "integer"});
    case T::kBoolOrString: return json::array({"boolean", "string"});
    case T::kObject:
    case T::kScalarMap:
    case T::kFreeMap: return "object";
    case T::kStringList:
    case T::kObjectList: return "array";
  }
  return nullptr;
}

// Compares one object level: its properties against the spec's children, recursing.
void compare_object(const air::FieldSpec& spec, const json& node) {
  INFO("object '" << spec.path << "'");
  REQUIRE(node.contains("properties"));
  CHECK(node.value("additionalProperties", true) == false);
  std::set<std::string> table, schema, table_required, schema_required;
  for (const auto& c : spec.children) {
    table.insert(c.name);
    if (c.required) table_required.insert(c.name);
  }
  for (const auto& [k, v] : node["properties"].items()) schema.insert(k);
  for (const auto& r : node.value("required", json::array())) schema_required.insert(r.get<std::string>());
  CHECK(table == schema);
  CHECK(table_required == schema_required);
  for (const auto& c : spec.children) {
    if (!node["properties"].contains(c.name)) continue;
    const json& p = node["properties"][c.name];
    INFO("field '" << c.path << "'");
    CHECK(p["type"] == expected_type(c.type));
    CHECK_FALSE(p.value("description", "").empty());
    std::vector<std::string> allowed;
    if (p.contains("enum")) allowed = p["enum"].get<std::vector<std::string>>();
    CHECK(allowed == c.allowed);
    std::string dflt = p.contains("default") ? (p["default"].is_string() ? p["default"].get<std::string>()
                                                                          : p["default"].dump())
                                             : "";
    CHECK(dflt == c.default_value);
    if (c.type == air::FieldType::kObject) compare_object(c, p);
    if (c.type == air::FieldType::kObjectList) compare_object(c, p["items"]);
    if (c.type == air::FieldType::kStringList) CHECK(p["items"]["type"] == "string");
    if (c.type == air::FieldType::kScalarMap) CHECK(p["additionalProperties"].is_object());
    if (c.type == air::FieldType::kFreeMap) CHECK(p["additionalProperties"] == true);
  }
}

}  // namespace

TEST_CASE("JSON schema matches the key table") {
  json schema = load_schema();
  CHECK(schema["type"] == "object");
  compare_object(air::workload_schema(), schema);
}

TEST_CASE("every field has a description and find_field finds it") {
  for (const air::FieldSpec* f : air::all_fields()) {
    INFO(f->path);
    CHECK_FALSE(f->description.empty());
    CHECK(air::find_field(f->path) == f);
  }
  CHECK(air::find_field("compute.nope") == nullptr);
}

TEST_CASE("field help shows type, requirement, default and allowed values") {
  CHECK(air::field_help("config.max_retries") == "config.max_retries\n"
                                                 "  type:        integer\n"
                                                 "  required:    no\n"
                                                 "  default:     3\n"
                                                 "  description: How many times a failed run is retried as a whole "
                                                 "(>= 0).\n");
  std::string acc = air::field_help("config.compute.accelerator_type");
  CHECK(acc.find("  required:    yes, when 'compute' is set\n") != std::string::npos);
  CHECK(acc.find("  allowed:     GPU_1xA10, GPU_1xH100, GPU_8xH100, GPU_1xH200, GPU_8xH200, CPU_1xHOST") !=
        std::string::npos);
  CHECK(air::field_help("config").find("  experiment_name ") != std::string::npos);
}

TEST_CASE("field help rejects unknown paths with did-you-mean") {
  try {
    air::field_help("config.compute.acelerator_type");
    FAIL("expected an error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()) == "unknown config field 'config.compute.acelerator_type'");
    CHECK(e.hint() == "did you mean 'config.compute.accelerator_type'? fields of 'config.compute': "
                      "accelerator_type, num_accelerators, pool_id");
    CHECK(e.exit_code() == air::kExitUsage);
  }
  CHECK_THROWS_WITH(air::field_help("config.parameters.lr"),
                    "'config.parameters' holds user-defined keys; there is no help for 'lr' below it");
}
