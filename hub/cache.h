// huggingface_hub's cache layout: <cache>/<models|datasets>--org--name/{blobs/<etag>, refs/<revision>,
// snapshots/<commit>/<path> -> ../../blobs/<etag>}, partial downloads as blobs/<etag>.incomplete, and
// locks under <cache>/.locks/<folder>/ (flock, as the Python filelock package takes them on Unix).
#pragma once
#include <functional>
#include <string>

namespace air::hub {

struct CacheRepo {
  std::string root;  // <cache>/<folder>
  std::string locks;  // <cache>/.locks/<folder>
};

CacheRepo cache_repo(const std::string& cache_dir, const std::string& folder_name);

// The commit a ref points at ("" when absent). A 40-hex revision is its own commit.
std::string read_ref(const CacheRepo& repo, const std::string& revision);
void write_ref(const CacheRepo& repo, const std::string& revision, const std::string& commit);
bool is_commit_hash(const std::string& s);

std::string blob_path(const CacheRepo& repo, const std::string& etag);
std::string snapshot_dir(const CacheRepo& repo, const std::string& commit);
// snapshots/<commit>/<file> -> relative link into ../../blobs/<etag>, replaced atomically.
void link_snapshot_file(const CacheRepo& repo, const std::string& commit, const std::string& file, const std::string& etag);

// An exclusive flock on a file, created with its folders; released on destruction. `on_wait` is called
// once when another process holds it.
class FileLock {
 public:
  FileLock(const std::string& path, const std::function<void()>& on_wait = {});
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace air::hub
