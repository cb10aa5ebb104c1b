// Internal to the workload parser: turns a loaded YamlNode tree into a Workload, reporting every
// structural problem (unknown keys, wrong types) and every semantic one (rules of each field) as located
// diagnostics. Used by core/workload/workload.cc; exposed for tests of the pieces.
#pragma once
#include <set>
#include <string>

#include "core/workload/workload.h"
#include "core/workload/keys.h"
#include "core/yaml/tree.h"

namespace air {

class WorkloadDecoder {
 public:
  WorkloadDecoder(DiagnosticSink& sink, const ParseOptions& opts, std::string base_dir)
      : sink_(sink), opts_(opts), base_dir_(std::move(base_dir)) {}

  // Fills w from root (a mapping). Diagnostics go to the sink; w is meaningful only without errors.
  void decode(const YamlNode& root, const std::string& file, Workload& w);

 private:
  struct Entry {
    const YamlNode* key = nullptr;
    const YamlNode* value = nullptr;
    explicit operator bool() const { return value != nullptr; }
  };

  // Structure: keys known, types right, required keys present. Marks bad nodes so later stages skip them.
  void check_structure(const YamlNode& n, const FieldSpec& spec, const YamlNode* key, const std::string& where);
  void check_object(const YamlNode& n, const FieldSpec& spec, const YamlNode* key, const std::string& where);
  void check_scalar(const YamlNode& n, const FieldSpec& spec, const YamlNode* key);
  void check_integer(const YamlNode& n, const FieldSpec& spec);
  void check_number(const YamlNode& n, const FieldSpec& spec);
  void check_list(const YamlNode& n, const FieldSpec& spec, const std::string& where);
  void check_scalar_map(const YamlNode& n, const FieldSpec& spec);
  void unknown_key(const YamlNode& key, const FieldSpec& spec, const std::string& where);

  // Typed access to checked nodes: an absent or bad entry gives an empty Entry.
  Entry get(const YamlNode* map, std::string_view name) const;
  std::optional<std::string> text(Entry e) const;
  std::optional<long long> integer(Entry e) const;

  void decode_compute(Entry e, Compute& c);
  void decode_environment(Entry e, Environment& env);
  void decode_dependency(const YamlNode& item, Environment& env);
  void decode_code_source(Entry e, std::optional<CodeSource>& out);
  void decode_include_paths(Entry e, CodeSource& cs);
  void decode_git(Entry e, CodeSource& cs);
  void check_root_path(Entry e, CodeSource& cs);
  void decode_env_and_secrets(const YamlNode& root, Workload& w);
  void decode_run_options(const YamlNode& root, Workload& w);
  void decode_permissions(Entry e, Workload& w);
  void check_name(Entry e, const char* field, size_t max_len);

  void error(const YamlNode& at, std::string message, std::string hint = {}, int length = 0);
  void error_key(Entry e, std::string message, std::string hint = {});

  DiagnosticSink& sink_;
  const ParseOptions& opts_;
  std::string base_dir_;
  std::string file_;
  std::set<const YamlNode*> bad_;
};

// Resolves a root_path as air does: $VARS and ${VARS} expand, '~' is the home folder, a 'project_root/'
// prefix or any other relative path is relative to base_dir (the YAML file's folder). Lexically normal.
std::string resolve_root_path(const std::string& path, const std::string& base_dir);

// s without leading and trailing spaces, tabs and line ends.
std::string trim(const std::string& s);

}  // namespace air
