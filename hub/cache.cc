// Writes follow one rule: nothing appears under its final name until it is complete (rename into place).
#include "hub/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hub/hub.h"

namespace air::hub {
namespace fs = std::filesystem;

CacheRepo cache_repo(const std::string& cache_dir, const std::string& folder_name) {
  return {(fs::path(cache_dir) / folder_name).string(), (fs::path(cache_dir) / ".locks" / folder_name).string()};
}

bool is_commit_hash(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string read_ref(const CacheRepo& repo, const std::string& revision) {
  std::ifstream in(fs::path(repo.root) / "refs" / revision);
  std::string commit;
  if (in && std::getline(in, commit)) {
    while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r' || commit.back() == ' ')) commit.pop_back();
    if (is_commit_hash(commit)) return commit;
  }
  return is_commit_hash(revision) ? revision : "";
}

void write_ref(const CacheRepo& repo, const std::string& revision, const std::string& commit) {
  if (revision == commit) return;
  fs::path ref = fs::path(repo.root) / "refs" / revision;
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  fs::path tmp = ref.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << commit;  // no newline, as huggingface_hub writes it
    if (!out.flush()) throw HubError("cannot write " + tmp.string() + ": " + std::strerror(errno), "check the free space and permissions of the hub cache");
  }
  fs::rename(tmp, ref, ec);
  if (ec) throw HubError("cannot write " + ref.string() + ": " + ec.message());
}

std::string blob_path(const CacheRepo& repo, const std::string& etag) { return (fs::path(repo.root) / "blobs" / etag).string(); }

std::string snapshot_dir(const CacheRepo& repo, const std::string& commit) {
  return (fs::path(repo.root) / "snapshots" / commit).string();
}

void link_snapshot_file(const CacheRepo& repo, const std::string& commit, const std::string& file, const std::string& etag) {
  fs::path link = fs::path(snapshot_dir(repo, commit)) / file;
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  // Relative, so the cache can be moved or mounted elsewhere (huggingface_hub does the same).
  fs::path target = fs::path(blob_path(repo, etag)).lexically_relative(link.parent_path());
  fs::path tmp = link.string() + ".tmp" + std::to_string(getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) throw HubError("cannot link " + link.string() + " to its blob: " + ec.message(), "check the hub cache's permissions");
}

FileLock::FileLock(const std::string& path, const std::function<void()>& on_wait) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw HubError("cannot open lock " + path + ": " + std::strerror(errno), "check the hub cache's permissions");
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  if (on_wait) on_wait();
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      ::close(fd_);
      throw HubError("cannot lock " + path + ": " + std::strerror(errno));
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace air::hub
