// Volumes: the workspace-owned folder that keeps `/Volumes/<catalog>/<schema>/<volume>/...` (docs/volumes.md;
// the path rules are core/volumes/path.h). No HTTP here: server/api/files.cc maps these calls onto routes.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/volumes/path.h"

namespace air::server {

// The folder on disk that holds every volume ($AIR_HOME/volumes, or `air server --volumes-root`). Paths
// are resolved component by component without following symbolic links, so nothing reaches outside it.
class VolumeStore {
 public:
  explicit VolumeStore(std::string root);
  const std::string& root() const { return root_; }

  struct Entry {
    std::string name;
    bool is_directory = false;
    uint64_t size = 0;
    int64_t modified_ms = 0;
  };
  // nullopt when nothing is there.
  std::optional<Entry> stat(const VolumePath& p) const;

  struct Page {
    std::vector<Entry> entries;  // sorted by name
    std::string next_page_token; // "" on the last page
  };
  Page list(const VolumePath& dir, size_t page_size, const std::string& page_token) const;

  void make_directories(const VolumePath& p);  // mkdir -p; idempotent; needs a path inside a volume
  void remove_file(const VolumePath& p);
  void remove_directory(const VolumePath& p);  // only an empty one (409 DIRECTORY_NOT_EMPTY)

  // Reads a file; the descriptor is owned by the reader.
  class Reader {
   public:
    explicit Reader(int fd, uint64_t size) : fd_(fd), size_(size) {}
    ~Reader();
    uint64_t size() const { return size_; }
    size_t read_at(uint64_t offset, char* buf, size_t n);  // 0 at the end
   private:
    int fd_;
    uint64_t size_;
  };
  std::unique_ptr<Reader> open_read(const VolumePath& p) const;

  // Writes a file under a temporary name in its folder; commit() renames it into place. Destroyed
  // without commit (error, dropped connection, killed server's next start), no file appears under the name.
  class Writer {
   public:
    Writer(int dir_fd, std::string name, std::string temp, bool overwrite, std::string shown);
    ~Writer();
    void write(const char* data, size_t n);
    void commit();
    uint64_t bytes() const { return bytes_; }
   private:
    int dir_fd_, fd_ = -1;
    std::string name_, temp_, shown_;
    bool overwrite_, committed_ = false;
    uint64_t bytes_ = 0;
  };
  // Checks up front that the name is free (or overwrite) and creates missing parent folders.
  std::unique_ptr<Writer> begin_write(const VolumePath& p, bool overwrite);

  struct Usage {
    uint64_t files = 0, bytes = 0;
    bool exists = false;
  };
  Usage usage(const VolumePath& p) const;  // files and bytes under a path (a file counts itself)

  static bool is_temp_name(const std::string& name);

 private:
  // Opens the folder holding p's last part (creating folders when `create`); returns its fd.
  int open_parent(const VolumePath& p, bool create) const;
  int open_dir(const VolumePath& p, bool create) const;

  std::string root_;
};

}  // namespace air::server
