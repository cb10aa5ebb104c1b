// The table itself, written once; paths are filled in from the nesting.
#include "core/workload/keys.h"

#include <fmt/format.h>

#include "core/workload/accelerators.h"
#include "core/base/edit_distance.h"
#include "core/base/error.h"

namespace air {

namespace {

using T = FieldType;

FieldSpec field(std::string name, T type, bool required, std::string description,
                std::vector<FieldSpec> children = {}, std::string dflt = {}, std::vector<std::string> allowed = {}) {
  FieldSpec f;
  f.name = std::move(name);
  f.type = type;
  f.required = required;
  f.description = std::move(description);
  f.children = std::move(children);
  f.default_value = std::move(dflt);
  f.allowed = std::move(allowed);
  return f;
}

void fill_paths(FieldSpec& f, const std::string& prefix) {
  f.path = prefix.empty() ? f.name : prefix + "." + f.name;
  for (auto& c : f.children) fill_paths(c, f.path);
}

FieldSpec build() {
  FieldSpec compute = field(
      "compute", T::kObject, true, "What each run gets: the accelerator type and how many accelerators.",
      {field("accelerator_type", T::kString, true,
             "The accelerator type of every node. Nodes = num_accelerators / accelerators per node. The CPU_* "
             "types run ranks on the host CPU for machines without GPUs.",
             {}, {}, accelerator_names()),
       field("num_accelerators", T::kInteger, true,
             "Total accelerators across all nodes; a positive multiple of the type's accelerators per node "
             "(16 with GPU_8xH100 gives 2 nodes of 8)."),
       field("pool_id", T::kString, false,
             "The GPU pool of the workspace the run waits in and runs on (server.conf [pools]; on Slurm a "
             "partition). Absent: the workspace's default pool.")});
  FieldSpec docker = field(
      "docker_image", T::kObject, false,
      "A registered container image to run in, instead of dependencies and version.",
      {field("url", T::kString, true, "The image URL."),
       field("tag_policy", T::kString, false, "How the tag resolves: 'auto' keeps it, 'latest' re-resolves it.", {},
             "auto", {"auto", "latest"}),
       field("credentials_scope", T::kString, false,
             "Secret scope of the registry credentials (with credentials_key; only with tag_policy 'latest')."),
       field("credentials_key", T::kString, false,
             "Secret key of the registry credentials (with credentials_scope; only with tag_policy 'latest').")});
  FieldSpec environment = field(
      "environment", T::kObject, false, "The software environment of every node.",
      {field("version", T::kStringOrInteger, false,
             "The client image version ('4'); only together with dependencies."),
       field("dependencies", T::kStringList, false,
             "pip requirement strings installed on every node (name, extras, version specifiers, markers, "
             "'name @ url', '-r requirements.txt')."),
       docker});
  FieldSpec git = field(
      "git", T::kObject, false, "Snapshot a committed state of a git repository instead of the working tree.",
      {field("branch", T::kString, false, "A local branch to archive (exactly one of branch and commit)."),
       field("commit", T::kString, false, "A commit to archive (exactly one of branch and commit)."),
       field("remote", T::kBoolOrString, false, "No longer supported; use commit. Only false or empty is accepted.")});
  FieldSpec snapshot = field(
      "snapshot", T::kObject, true, "Where the code comes from.",
      {field("root_path", T::kString, true,
             "The project folder to upload; relative paths resolve against the YAML file's folder. '~' and "
             "$VARS expand. It must exist."),
       field("include_paths", T::kStringList, false,
             "Only these relative paths under root_path go into the snapshot (non-empty list, no '..')."),
       field("remote_volume", T::kString, false, "Where snapshots are stored remotely; must start with /Volumes/."),
       git});
  // Two forms: the nested `type: snapshot` + `snapshot: {...}` of the Go CLI, and the flat `root_path: .`
  // (with include_paths, remote_volume, git) of the public docs. rules.cc requires one complete form.
  FieldSpec flat_root = snapshot.children[0];
  flat_root.required = false;
  flat_root.description = "The flat form: the project folder to upload (instead of type + snapshot); relative paths "
                   "resolve against the YAML file's folder.";
  FieldSpec code_source = field(
      "code_source", T::kObject, false,
      "The code to ship to every node, unpacked at $CODE_SOURCE_PATH: `root_path: .` or `type: snapshot` with "
      "`snapshot: {root_path: .}`.",
      {field("type", T::kString, false, "The kind of code source (the nested form; with snapshot).", {}, {},
             {"snapshot"}),
       snapshot, flat_root, snapshot.children[1], snapshot.children[2], snapshot.children[3]});
  code_source.children[1].required = false;
  FieldSpec permission = field(
      "permissions", T::kObjectList, false, "Who else may see or manage the run (exactly one principal each).",
      {field("user_name", T::kString, false, "A user principal."),
       field("group_name", T::kString, false, "A group principal."),
       field("service_principal_name", T::kString, false, "A service principal."),
       field("level", T::kString, true, "The permission level (for example CAN_VIEW, CAN_MANAGE).")});
  FieldSpec root = field(
      "", T::kObject, true, "A workload: what to run, on what, with which code and settings.",
      {field("experiment_name", T::kString, true,
             "Names the run and its MLflow experiment: 1-100 characters of A-Z a-z 0-9 _ -."),
       compute, environment, code_source,
       field("command", T::kString, true,
             "Shell text run with bash on every node (at most 1000 lines). It sees NUM_NODES, NODE_RANK, "
             "LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, CODE_SOURCE_PATH and HYPERPARAMETERS_PATH."),
       field("env_variables", T::kScalarMap, false,
             "Environment variables for the command: NAME: value; names match [A-Za-z_][A-Za-z0-9_]*, values "
             "are kept as written."),
       field("secrets", T::kScalarMap, false,
             "Environment variables filled from the workspace's secret store: NAME: scope/key. Values never "
             "appear in output."),
       field("parameters", T::kFreeMap, false,
             "Free-form hyperparameters, written as YAML to the file at $HYPERPARAMETERS_PATH."),
       field("max_retries", T::kInteger, false, "How many times a failed run is retried as a whole (>= 0).", {},
             "3"),
       field("timeout_minutes", T::kInteger, false, "Ends the run as TIMED_OUT after this many minutes (>= 1)."),
       field("stall_timeout_minutes", T::kNumber, false,
             "Fails the attempt when a running node writes no log line and its GPUs sit idle for this many mi"
             "nutes (fractions allowed), naming the stalled node, after an alert at half that time; the attem"
             "pt is then retried per max_retries. Busy GPUs count as progress. Unset: 20 minutes on nodes who"
             "se GPUs the agent reads, off elsewhere; 0 turns it off."),
       field("straggler_minutes", T::kNumber, false,
             "Alerts (without ending anything) when a node's last step line is behind the leading node's by m"
             "ore than this many minutes (fractions allowed; default 5; 0 turns it off)."),
       field("system_metrics_interval", T::kNumber, false,
             "Seconds between two samples of each node's GPUs, CPU, memory, disk and network, logged as MLflo"
             "w system metrics (system/node_<rank>/...; fractions allowed; 0: none logged).",
             {}, "10"),
       field("step_pattern", T::kString, false,
             "A regular expression (ECMAScript) whose first group is the step number in a node's output line,"
             " for the straggler alert; default: air-train's 'step N/M | ...' or any line starting 'step N'."),
       field("priority_class", T::kString, false,
             "The run's class in its pool's queue: CRITICAL runs first and may preempt BEST_EFFORT runs, "
             "NORMAL next, BEST_EFFORT last.",
             {}, "NORMAL", {"BEST_EFFORT", "NORMAL", "CRITICAL"}),
       field("idempotency_token", T::kString, false,
             "Submitting twice with the same token gives the same run (1-64 characters)."),
       field("mlflow_run_name", T::kString, false, "The MLflow run name: 1-100 characters of A-Z a-z 0-9 _ -."),
       field("mlflow_experiment_directory", T::kString, false,
             "Workspace folder of the MLflow experiment; must start with /Workspace."),
       permission,
       field("usage_policy_name", T::kString, false,
             "A usage (budget) policy by name, at most 127 characters; not with usage_policy_id."),
       field("usage_policy_id", T::kString, false, "A usage (budget) policy by UUID; not with usage_policy_name.")});
  for (auto& c : root.children) fill_paths(c, "");
  return root;
}

void collect(const FieldSpec& f, std::vector<const FieldSpec*>& out) {
  for (const auto& c : f.children) {
    out.push_back(&c);
    collect(c, out);
  }
}

}  // namespace

const FieldSpec& workload_schema() {
  static const FieldSpec root = build();
  return root;
}

const FieldSpec* find_field(std::string_view path) {
  const FieldSpec* cur = &workload_schema();
  if (path.empty()) return cur;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string_view part = path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    const FieldSpec* next = nullptr;
    for (const auto& c : cur->children) {
      if (c.name == part) next = &c;
    }
    if (!next) return nullptr;
    cur = next;
    if (dot == std::string_view::npos) return cur;
    start = dot + 1;
  }
}

std::string type_name(FieldType t) {
  switch (t) {
    case T::kString: return "string";
    case T::kInteger: return "integer";
    case T::kNumber: return "number";
    case T::kStringOrInteger: return "string or integer";
    case T::kBoolOrString: return "boolean or string";
    case T::kObject: return "object";
    case T::kStringList: return "list of strings";
    case T::kObjectList: return "list of objects";
    case T::kScalarMap: return "map of NAME: value";
    case T::kFreeMap: return "free-form map";
  }
  return "?";
}

std::vector<std::string> child_names(const FieldSpec& f) {
  std::vector<std::string> names;
  for (const auto& c : f.children) names.push_back(c.name);
  return names;
}

std::vector<const FieldSpec*> all_fields() {
  std::vector<const FieldSpec*> out;
  collect(workload_schema(), out);
  return out;
}

}  // namespace air
