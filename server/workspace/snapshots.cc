// Snapshots (server/workspace/snapshots.h).
#include "server/workspace/snapshots.h"

namespace air::server {

Snapshots::Snapshots(const std::string& blobs_dir, const std::string& db_path, RunReaders run_readers)
    : blobs_(blobs_dir), uploads_(std::make_unique<SnapshotUploads>(db_path)), run_readers_(std::move(run_readers)) {}

std::optional<std::string> Snapshots::refusal(const Principal& who, const std::string& digest) const {
  if (who.admin) return std::nullopt;
  if (!who.is_node() && !who.user.empty() && uploads_->uploaded_by(digest, who.user)) return std::nullopt;
  return run_readers_(who, digest);
}

}  // namespace air::server
