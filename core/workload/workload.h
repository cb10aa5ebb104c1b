// The workload spec: the parsed, validated form of an air YAML file (schema: docs/workload.md and
// schemas/workload.schema.json). parse_workload reports every error at once as located diagnostics.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/diagnostics.h"

namespace air {

struct Compute {
  std::string accelerator_type;   // GPU_8xH100, ..., CPU_2xHOST (see core/workload/accelerators.h)
  int num_accelerators = 0;
  int accelerators_per_node = 0;  // from the catalog
  int nodes = 0;                  // num_accelerators / accelerators_per_node
  bool gpu = true;                // false for the CPU type
  std::string pool_id;            // the workspace's GPU pool; "" for its default
};

struct DockerImage {
  std::string url;
  std::string tag_policy = "auto";  // auto | latest
  std::string credentials_scope, credentials_key;
};

struct Environment {
  std::optional<std::string> version;
  std::vector<std::string> dependencies;  // pip requirement strings, syntax-checked
  std::optional<DockerImage> docker_image;
};

struct GitRef {
  std::string branch, commit;  // exactly one is set
};

struct CodeSource {
  std::string type = "snapshot";
  std::string root_path;           // as written
  std::string root_path_resolved;  // absolute, relative paths resolved against the YAML file's folder
  std::vector<std::string> include_paths;
  std::optional<GitRef> git;
  std::string remote_volume;
};

struct SecretRef {
  std::string name;  // environment variable name
  std::string scope;
  std::string key;
};

struct Permission {
  std::string principal_kind;  // user_name | group_name | service_principal_name
  std::string principal;
  std::string level;
};

struct Workload {
  std::string source_file;  // path as given
  std::string source_text;  // the YAML text (after overrides are applied, re-rendered)
  std::string experiment_name;
  Compute compute;
  Environment environment;
  std::optional<CodeSource> code_source;
  std::string command;
  std::vector<std::pair<std::string, std::string>> env_variables;  // in file order; scalars as text
  std::vector<SecretRef> secrets;                                  // in file order
  std::string parameters_yaml;  // `parameters` rendered as YAML (empty when absent); HYPERPARAMETERS_PATH
  int max_retries = 3;
  std::optional<int> timeout_minutes;
  std::optional<double> stall_timeout_minutes;  // fractions allowed (0.5 = 30 s); 0: off (core/health/stall.h)
  std::optional<double> straggler_minutes;      // the straggler alert's lag; 0: off
  double system_metrics_interval = 10;          // seconds between system metric samples; 0: none logged
  std::string step_pattern;                     // regex whose group 1 is a step line's step ("": air-train's)
  std::string priority_class = "NORMAL";  // BEST_EFFORT | NORMAL | CRITICAL (docs/scheduler.md)
  std::string idempotency_token;
  std::string mlflow_run_name;
  std::string mlflow_experiment_directory;
  std::vector<Permission> permissions;
  std::string usage_policy_name, usage_policy_id;
};

struct ParseOptions {
  std::vector<std::string> overrides;  // KEY=VALUE, VALUE parsed as YAML
  bool check_paths = true;             // root_path / include_paths exist (dry-run and submit)
  int max_errors = 20;                 // how many errors render_all shows (the CLI passes it on)
};

struct ParseResult {
  std::optional<Workload> workload;  // set only when there are no errors
  std::vector<Diagnostic> diagnostics;  // errors and warnings, in file order (all of them, up to 1000)
  std::vector<std::string> notes;       // "Override: changing compute.num_accelerators from 16 to 32"
  bool ok() const { return workload.has_value(); }
};

// Reads and validates a workload file. Never throws for bad input: every problem is a diagnostic.
ParseResult parse_workload_file(const std::string& path, const ParseOptions& opts = {});
// Same for text already in memory (the workspace re-validates what the CLI sent); `file` names it in
// diagnostics and `base_dir` resolves relative root_path.
ParseResult parse_workload_text(const std::string& text, const std::string& file,
                                const std::string& base_dir, const ParseOptions& opts = {});

}  // namespace air
