// The snapshot_uploads table (server/store/snapshot_uploads.h).
#include "server/store/snapshot_uploads.h"

#include "server/store/sqlite.h"

namespace air::server {

SnapshotUploads::SnapshotUploads(const std::string& db_path) : db_(std::make_unique<sql::Db>(db_path)) {
  sql::exec(db_->get(), R"(
    CREATE TABLE IF NOT EXISTS snapshot_uploads(
      digest TEXT NOT NULL, user_name TEXT NOT NULL, first_ms INTEGER NOT NULL, PRIMARY KEY(digest, user_name));
  )");
}

SnapshotUploads::~SnapshotUploads() = default;

void SnapshotUploads::record(const std::string& digest, const std::string& user, int64_t now_ms) {
  std::lock_guard lock(mu_);
  sql::Stmt(db_->get(), "INSERT OR IGNORE INTO snapshot_uploads(digest, user_name, first_ms) VALUES (?, ?, ?)")
      .bind(1, digest).bind(2, user).bind(3, now_ms).run();
}

bool SnapshotUploads::uploaded_by(const std::string& digest, const std::string& user) const {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT 1 FROM snapshot_uploads WHERE digest = ? AND user_name = ?");
  st.bind(1, digest).bind(2, user);
  return st.step();
}

std::vector<std::string> SnapshotUploads::uploaders(const std::string& digest) const {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT user_name FROM snapshot_uploads WHERE digest = ? ORDER BY user_name");
  st.bind(1, digest);
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.text(0));
  return out;
}

}  // namespace air::server
