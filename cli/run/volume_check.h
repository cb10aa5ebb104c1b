// `air run`'s and `air run --dry-run`'s warning about the volumes a workload names that its submitter does
// not own: their owner can read what the run writes there and decides who else may (docs/volumes.md).
#pragma once
#include <string>
#include <vector>

namespace air {
class Client;
struct Workload;
}  // namespace air

namespace air::cli {

// One line per such volume, naming it and its owner; empty when all are the caller's, or do not exist yet
// (they become the caller's), or the workspace does not answer (the submit itself then says why).
std::vector<std::string> foreign_volume_warnings(const Workload& w, Client& c);

}  // namespace air::cli
