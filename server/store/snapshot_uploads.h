// Who uploaded each code snapshot (a digest is a name anyone can compute, not a key): the workspace's
// SQLite table of (digest, user). A run may name a digest only if its submitter uploaded it or may view a
// run made from it (Workspace::snapshot_refusal; docs/security.md).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace air::server {

namespace sql { class Db; }

class SnapshotUploads {
 public:
  // Opens its own connection to the workspace database and creates the table when missing.
  explicit SnapshotUploads(const std::string& db_path);
  ~SnapshotUploads();

  // `user` sent the bytes of `digest` (the upload's hash matched): from now on it may name it in a run.
  void record(const std::string& digest, const std::string& user, int64_t now_ms);
  bool uploaded_by(const std::string& digest, const std::string& user) const;
  std::vector<std::string> uploaders(const std::string& digest) const;  // by name

 private:
  std::unique_ptr<sql::Db> db_;
  mutable std::mutex mu_;
};

}  // namespace air::server
