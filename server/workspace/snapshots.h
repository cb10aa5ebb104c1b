// Snapshots: the workspace's code snapshots (the blob store), who uploaded each, and who may read one:
// admins, its uploaders, the node tokens of a run made from it, the users who may view such a run. The run
// half of that rule is asked of the run table (RunReaders, under the run lock); the rest is this part's.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/store/blobs.h"
#include "server/store/snapshot_uploads.h"
#include "server/workspace/access.h"

namespace air::server {

class Snapshots {
 public:
  // nullopt when a run lets `who` read the snapshot (a node token: its own run made from it; a user: a run
  // made from it that it may view), else why not.
  using RunReaders = std::function<std::optional<std::string>(const Principal& who, const std::string& digest)>;

  Snapshots(const std::string& blobs_dir, const std::string& db_path, RunReaders run_readers);

  BlobStore& blobs() { return blobs_; }
  const BlobStore& blobs() const { return blobs_; }
  // Who uploaded each snapshot (server/store/snapshot_uploads.h).
  SnapshotUploads& uploads() { return *uploads_; }
  // Why `who` may not read (or name in a run) the snapshot, or nullopt. The routes answer a refused caller
  // 404, as for a digest that does not exist (a digest is a name anyone can compute, not a key).
  std::optional<std::string> refusal(const Principal& who, const std::string& digest) const;

 private:
  BlobStore blobs_;
  std::unique_ptr<SnapshotUploads> uploads_;
  RunReaders run_readers_;
};

}  // namespace air::server
