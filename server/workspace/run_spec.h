// The run spec: what every node of every attempt of a run is given, fixed at submit. Typed: the run-level
// fields of the node spec the agents receive (api::NodeSpec, core/wire/api.h) and the MLflow run name.
// Stored in the run's row as JSON (RunRecord::spec_json); to_json and parse are the only code that reads or
// writes that text, with the keys workspaces have always stored (a workspace reads its older rows).
#pragma once
#include <string>
#include <vector>

#include "core/wire/api.h"

namespace air::server {

struct RunSpec {
  // command, env, parameters_yaml, local_world_size, gpu, secrets, dependencies, environment_version,
  // snapshot_path; the per-attempt and per-node fields (run id, ranks, ports, volumes, limits) stay unset.
  api::NodeSpec node;
  std::string mlflow_run_name;
  std::string usage_policy_name;  // tags the run's usage records (docs/scheduler.md "Usage")

  std::string to_json() const;
  // Throws HttpError 500 for text that is not a stored run spec.
  static RunSpec parse(const std::string& json);
  // The /Volumes paths the spec names: in its command, env values and parameters.
  std::vector<std::string> named_volume_paths() const;
};

}  // namespace air::server
