// Admission: the checks a submit passes, as named steps in the order Workspace::submit runs them. Each step
// throws the HttpError the caller sees (status, code, message naming the field) and otherwise returns what the
// next needs; the last builds the typed run spec. The steps touch no run and take no run lock: they read the
// identity store, the secret store and the volume and snapshot stores they are handed. What needs the run
// table (idempotency, the snapshot a node or viewer may read) stays in Workspace::submit.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "core/workload/workload.h"
#include "server/store/blobs.h"
#include "server/store/identity.h"
#include "server/store/volumes.h"
#include "server/workspace/access.h"
#include "server/workspace/isolation.h"
#include "server/workspace/run_spec.h"
#include "server/workspace/services.h"

namespace air::server::admission {

// 1. Who submits: a user (a node token may not), and one this workspace's isolation lets run (a local
//    workspace without a sandbox runs only its bootstrap admin's runs while it has other users). 403 / 409.
void check_submitter(const Principal& who, const Isolation& isolation, const IdentityStore& identity);
// 2. The workload text, validated as the CLI does (paths are on the submitter's machine: not checked). 400
//    INVALID_WORKLOAD with every diagnostic.
Workload parse(const api::SubmitRequest& req);
// 3. `permissions:` as the run's access list: each user, service principal and group must exist. 400 naming
//    permissions[k].
std::vector<api::RunPermission> resolve_permissions(const Workload& w, const IdentityStore& identity);
// 4. Secrets: the owner may READ every scope the nodes will read (403), and each referenced secret exists (400
//    SECRETS_MISSING with a diagnostic and the command that creates it).
void check_secrets(const Workload& w, const Principal& who, WorkspaceServices& services, const std::string& file_name);
// 5. The code snapshot: with code_source remote_volume, in that volume; else uploaded to the snapshot store and
//    readable by the submitter (`may_read`; one it may not read is answered as never uploaded). 400 SNAPSHOT_MISSING.
struct Snapshot {
  std::string path;  // "/Volumes/.../<digest>.tar.zst" for remote_volume, else ""
  uint64_t bytes = 0;
};
Snapshot check_snapshot(const api::SubmitRequest& req, const Workload& w, const VolumeStore& volumes,
                        const BlobStore& blobs, const std::function<bool()>& may_read);
// 6. The pool fits the run: `pool_gpus` is the pool's GPU count where the workspace hands out GPUs itself
//    (nullopt: a batch backend's pool, or no GPUs counted). 400 INSUFFICIENT_RESOURCES.
void check_fits_pool(const Workload& w, const std::string& pool, std::optional<int> pool_gpus, bool pools_configured);
// 7. The run spec every node will be given.
RunSpec run_spec(const Workload& w, const Snapshot& snapshot);

}  // namespace air::server::admission
