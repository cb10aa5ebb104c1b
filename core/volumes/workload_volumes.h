// The volumes a workload names: every /Volumes path in its command, env_variables and parameters, and its
// code_source.snapshot.remote_volume. The workspace checks each at submit; the CLI names their owners.
#pragma once
#include <string>
#include <vector>

namespace air {

struct Workload;

// "catalog/schema/volume" of each, without duplicates, in order of first appearance; invalid paths skipped
// (the workload's own validation reports a bad remote_volume).
std::vector<std::string> workload_volume_keys(const Workload& w);

}  // namespace air
