// The run requests that are not an attempt's: submit (admission's named steps, then the run table and the
// queue), get, list, cancel, and who may see a run. What `/api/air/v1/runs` and the run page hand to the
// workspace; the agents' requests go to the attempt lifecycle (lifecycle.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "server/workspace/access.h"

namespace air::server {

// The parts Runs works through, each held by reference (a route that includes this header sees only Runs).
class Auth;
class IdentityStore;
class Lifecycle;
class LogStore;
class Queue;
class RunTable;
class Snapshots;
class Store;
class VolumeAccess;
class VolumeStore;
class WorkspaceServices;
struct WorkspaceOptions;

class Runs {
 public:
  // What the run requests touch: each owned by the workspace, outliving this.
  struct Parts {
    const WorkspaceOptions& opts;
    Store& store;
    RunTable& runs;
    Queue& queue;          // the pool a run waits in, and whether it fits
    Lifecycle& lifecycle;  // a new run's pass of the queue; cancel
    Auth& auth;            // the bootstrap principal of in-process callers
    const IdentityStore& identity;
    WorkspaceServices& services;  // the secrets a workload references; the attempts' MLflow metrics
    VolumeAccess& volume_access;
    const VolumeStore& volumes;
    const LogStore& logs;  // each node's log size (get)
    Snapshots& snapshots;
  };
  explicit Runs(Parts p);

  // Called by Workspace::start with the run lock held, after the run table is loaded.
  void loaded(int64_t max_seq) { seq_ = max_seq; }

  // `who` becomes the run's owner; the workload's permissions are its access list. Refused (403) when the
  // owner may not READ a secret scope or volume the workload references.
  api::RunInfo submit(const api::SubmitRequest& req, const Principal& who);
  api::RunInfo submit(const api::SubmitRequest& req);
  api::RunInfo get(const std::string& run_id) const;
  // Every run, as the bootstrap admin sees them (in-process callers).
  api::RunList list(int limit, bool all_status) const;
  // The runs `who` may view: only its own unless all_users.
  api::RunList list(int limit, bool all_status, const Principal& who, bool all_users) const;
  // A queued run ends at once; a running one is stopped (Lifecycle::cancel).
  api::CancelReply cancel(const std::string& run_id);

  // A run's owner and access list (throws 404 for an unknown run).
  struct Access {
    std::string owner;
    std::vector<api::RunPermission> grants;
  };
  Access access(const std::string& run_id) const;
  // Throws 404 for a run `who` may not view (as for one that does not exist), 403 PERMISSION_DENIED (naming
  // the missing level) unless `who` has `need` on it.
  void require(const Principal& who, const std::string& run_id, RunLevel need) const;

 private:
  int64_t now() const;
  std::string new_run_id() const;

  const WorkspaceOptions& opts_;
  Store& store_;
  RunTable& runs_;
  Queue& queue_;
  Lifecycle& lifecycle_;
  Auth& auth_;
  const IdentityStore& identity_;
  WorkspaceServices& services_;
  VolumeAccess& volume_access_;
  const VolumeStore& volumes_;
  const LogStore& logs_;
  Snapshots& snapshots_;
  int64_t seq_ = 0;  // the last submission's number (run lock)
};

}  // namespace air::server
