// The workspace's master key for secrets at rest: 32 random bytes in a 0600 file beside the database
// (never in it). Created atomically on first use; a file others could read is refused, not "fixed".
#pragma once
#include <array>
#include <string>

namespace air::server {

class MasterKey {
 public:
  static constexpr size_t kSize = 32;
  explicit MasterKey(const std::array<unsigned char, kSize>& bytes) : bytes_(bytes) {}
  MasterKey(const MasterKey&) = default;
  MasterKey& operator=(const MasterKey&) = default;
  ~MasterKey();
  const unsigned char* data() const { return bytes_.data(); }

 private:
  std::array<unsigned char, kSize> bytes_;
};

// "<folder of db_path>/secrets.key".
std::string master_key_path_for(const std::string& db_path);

// Reads the key at `path`; when the file does not exist, creates it with 32 bytes from the OS CSPRNG
// (written to a private temporary file, then linked into place, so no reader ever sees a partial key and
// two racing creators agree on one key). Throws air::Error when the file is not a regular file, is
// readable or writable by group/others, belongs to another user, or is not exactly 32 bytes.
MasterKey load_or_create_master_key(const std::string& path);

}  // namespace air::server
