// Content-addressed blobs (snapshot archives): $home/blobs/sha256/<ab>/<digest>. An upload streams into a
// temporary file while being hashed, and is renamed into place only when its SHA-256 matches the name.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace air::server {

bool is_sha256_hex(std::string_view s);

class BlobWriter;

class BlobStore {
 public:
  explicit BlobStore(std::string dir);
  bool has(const std::string& digest) const;
  std::string path(const std::string& digest) const;
  uint64_t size(const std::string& digest) const;
  // Starts an upload of a blob that claims to have `digest`.
  std::unique_ptr<BlobWriter> begin(const std::string& digest, uint64_t max_bytes);
  // Takes `file` as the blob `digest` without copying it: a hard link to the very inode that was hashed. Only a
  // file this process's user owns and nobody else may write (a regular file, no group or other write bit, at
  // most max_bytes) whose bytes hash to `digest`: then nobody but that user can change the blob afterwards, and
  // that user could write the store anyway. Used for the CLI's snapshot cache of the same home (the local
  // workspace), where an upload would copy the archive twice over loopback. Returns "" when the blob is there
  // (linked now or before), else why not (the caller uploads instead).
  std::string adopt(const std::string& digest, const std::string& file, uint64_t max_bytes);

 private:
  std::string dir_;
};

class BlobWriter {
 public:
  BlobWriter(std::string tmp_path, std::string final_path, std::string digest, uint64_t max_bytes);
  ~BlobWriter();  // removes the temporary file unless commit() succeeded
  // false when the blob grew beyond max_bytes, or the disk refused it (write_errno() then says why; a
  // disk that would be left without its reserve for the database counts as ENOSPC): the upload is abandoned.
  bool write(const char* data, size_t n);
  int write_errno() const { return errno_; }
  // Verifies the digest and renames into place; throws air::Error on a mismatch.
  void commit();
  uint64_t bytes() const { return bytes_; }

 private:
  std::string tmp_, final_, digest_;
  uint64_t max_, bytes_ = 0;
  int fd_ = -1, errno_ = 0;
  uint64_t unchecked_ = 0;  // bytes since free space was last checked
  void* ctx_ = nullptr;  // EVP_MD_CTX
  bool committed_ = false;
};

// Hex SHA-256 of a byte string (tokens are stored this way).
std::string sha256_hex(std::string_view data);

}  // namespace air::server
