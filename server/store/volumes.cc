// The on-disk store of volumes. Every operation walks the path from the root's descriptor with
// openat(O_NOFOLLOW), so a symbolic link planted inside a volume cannot lead a request outside the root.
#include "core/base/fd.h"
#include "server/store/volumes.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>

namespace air::server {

namespace fs = std::filesystem;

namespace {

const char* kTempMark = ".air-part-";

[[noreturn]] void io_error(const std::string& what, const VolumePath& p, int err) {
  throw FsError(500, "INTERNAL_ERROR", fmt::format("cannot {} {}: {}", what, p.str(), std::strerror(err)));
}

int64_t mtime_ms(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

std::string random_hex() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

}  // namespace

VolumeStore::VolumeStore(std::string root) : root_(std::move(root)) {}

bool VolumeStore::is_temp_name(const std::string& name) {
  return !name.empty() && name[0] == '.' && name.find(kTempMark) != std::string::npos;
}

int VolumeStore::open_dir(const VolumePath& p, bool create) const {
  if (create) {
    std::error_code ec;
    // The storage root is the workspace's alone (0700): runs reach a volume through their mounts only, so
    // the volumes' own open modes (share_volume_folder) open nothing to the machine's other accounts. A
    // Slurm workspace running as root lets its jobs' accounts through (server/backends/slurm_accounts.h).
    if (fs::create_directories(root_, ec)) ::chmod(root_.c_str(), 0700);
  }
  int fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) throw FsError(404, "NOT_FOUND", fmt::format("{} does not exist", p.str()));
    io_error("open the volumes root for", p, errno);
  }
  UniqueFd cur(fd);
  VolumePath seen;
  for (const auto& part : p.parts) {
    seen.parts.push_back(part);
    int next = ::openat(cur.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create) {
      // 0777 and 0666 below: the umask, or a volume's default ACL (share_volume_folder: every account whose
      // runs write the volume may write what an upload made), decides.
      if (::mkdirat(cur.get(), part.c_str(), 0777) != 0 && errno != EEXIST) io_error("create", seen, errno);
      next = ::openat(cur.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0) {
      int err = errno;
      struct stat st {};
      if (err == ENOENT) throw FsError(404, "NOT_FOUND", fmt::format("{} does not exist", seen.str()));
      if (::fstatat(cur.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        throw FsError(400, "INVALID_PARAMETER_VALUE",
                      fmt::format("{} is a symbolic link; volume paths never follow links", seen.str()));
      if (err == ENOTDIR)
        throw FsError(409, "RESOURCE_CONFLICT", fmt::format("{} is a file, not a directory", seen.str()));
      io_error("open", seen, err);
    }
    cur.reset(next);
  }
  return cur.release();
}

int VolumeStore::open_parent(const VolumePath& p, bool create) const {
  VolumePath parent = p;
  parent.parts.pop_back();
  return open_dir(parent, create);
}

std::optional<VolumeStore::Entry> VolumeStore::stat(const VolumePath& p) const {
  if (p.parts.empty()) {
    struct stat st {};
    if (::stat(root_.c_str(), &st) != 0) return Entry{"Volumes", true, 0, 0};
    return Entry{"Volumes", true, 0, mtime_ms(st)};
  }
  int dfd;
  try {
    dfd = open_parent(p, false);
  } catch (const FsError& e) {
    if (e.status == 404) return std::nullopt;
    throw;
  }
  UniqueFd d(dfd);
  struct stat st {};
  if (::fstatat(d.get(), p.parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::nullopt;
    io_error("read", p, errno);
  }
  if (S_ISLNK(st.st_mode))
    throw FsError(400, "INVALID_PARAMETER_VALUE",
                  fmt::format("{} is a symbolic link; volume paths never follow links", p.str()));
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
    throw FsError(400, "INVALID_PARAMETER_VALUE", fmt::format("{} is neither a file nor a directory", p.str()));
  return Entry{p.parts.back(), S_ISDIR(st.st_mode), S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0,
               mtime_ms(st)};
}

VolumeStore::Page VolumeStore::list(const VolumePath& dir, size_t page_size, const std::string& page_token) const {
  if (dir.parts.empty() && !fs::exists(root_)) return {};  // a new workspace: /Volumes is empty
  UniqueFd d(open_dir(dir, false));
  DIR* ds = ::fdopendir(::dup(d.get()));
  if (!ds) io_error("list", dir, errno);
  std::vector<Entry> all;
  while (dirent* e = ::readdir(ds)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || is_temp_name(name)) continue;
    struct stat st {};
    if (::fstatat(d.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) continue;  // links and devices are not shown
    all.push_back({name, S_ISDIR(st.st_mode), S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0,
                   mtime_ms(st)});
  }
  ::closedir(ds);
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  Page page;
  auto it = all.begin();
  if (!page_token.empty())  // the token is the last name of the previous page
    it = std::upper_bound(all.begin(), all.end(), page_token,
                          [](const std::string& t, const Entry& e) { return t < e.name; });
  size_t n = std::max<size_t>(1, std::min<size_t>(page_size, 1000));
  for (; it != all.end() && page.entries.size() < n; ++it) page.entries.push_back(*it);
  if (it != all.end()) page.next_page_token = page.entries.back().name;
  return page;
}

void VolumeStore::make_directories(const VolumePath& p) {
  if (!p.in_volume())
    throw FsError(400, "INVALID_PARAMETER_VALUE",
                  fmt::format("{} names no volume: create /Volumes/<catalog>/<schema>/<volume>", p.str()));
  ::close(open_dir(p, true));
}

void VolumeStore::remove_file(const VolumePath& p) {
  auto e = stat(p);
  if (!e) throw FsError(404, "NOT_FOUND", fmt::format("{} does not exist", p.str()));
  if (e->is_directory) throw FsError(400, "INVALID_PARAMETER_VALUE", fmt::format("{} is a directory", p.str()));
  UniqueFd d(open_parent(p, false));
  if (::unlinkat(d.get(), p.parts.back().c_str(), 0) != 0) io_error("delete", p, errno);
}

void VolumeStore::remove_directory(const VolumePath& p) {
  if (!p.in_volume()) throw FsError(400, "INVALID_PARAMETER_VALUE", fmt::format("{} names no volume", p.str()));
  auto e = stat(p);
  if (!e) throw FsError(404, "NOT_FOUND", fmt::format("{} does not exist", p.str()));
  if (!e->is_directory) throw FsError(400, "INVALID_PARAMETER_VALUE", fmt::format("{} is a file", p.str()));
  UniqueFd d(open_parent(p, false));
  if (::unlinkat(d.get(), p.parts.back().c_str(), AT_REMOVEDIR) != 0) {
    if (errno == ENOTEMPTY || errno == EEXIST)
      throw FsError(409, "DIRECTORY_NOT_EMPTY",
                    fmt::format("{} is not empty; delete its contents first (air fs rm -r)", p.str()));
    io_error("delete", p, errno);
  }
}

VolumeStore::Reader::~Reader() { ::close(fd_); }

size_t VolumeStore::Reader::read_at(uint64_t offset, char* buf, size_t n) {
  for (;;) {
    ssize_t got = ::pread(fd_, buf, n, static_cast<off_t>(offset));
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return 0;
  }
}

std::unique_ptr<VolumeStore::Reader> VolumeStore::open_read(const VolumePath& p) const {
  if (!p.in_volume() || p.is_volume_root())
    throw FsError(404, "NOT_FOUND", fmt::format("{} is not a file", p.str()));
  UniqueFd d(open_parent(p, false));
  int fd = ::openat(d.get(), p.parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) throw FsError(404, "NOT_FOUND", fmt::format("{} does not exist", p.str()));
    if (errno == ELOOP)
      throw FsError(400, "INVALID_PARAMETER_VALUE",
                    fmt::format("{} is a symbolic link; volume paths never follow links", p.str()));
    io_error("open", p, errno);
  }
  UniqueFd f(fd);
  struct stat st {};
  ::fstat(f.get(), &st);
  if (S_ISDIR(st.st_mode))
    throw FsError(404, "NOT_FOUND", fmt::format("{} is a directory, not a file", p.str()));
  return std::make_unique<Reader>(f.release(), static_cast<uint64_t>(st.st_size));
}

std::unique_ptr<VolumeStore::Writer> VolumeStore::begin_write(const VolumePath& p, bool overwrite) {
  if (!p.in_volume() || p.is_volume_root())
    throw FsError(400, "INVALID_PARAMETER_VALUE",
                  fmt::format("{} is not a file path inside a volume (/Volumes/<catalog>/<schema>/<volume>/<file>)",
                              p.str()));
  if (is_temp_name(p.parts.back()))
    throw FsError(400, "INVALID_PARAMETER_VALUE", fmt::format("'{}' is a reserved name", p.parts.back()));
  if (auto e = stat(p)) {
    if (e->is_directory) throw FsError(409, "RESOURCE_CONFLICT", fmt::format("{} is a directory", p.str()));
    if (!overwrite)
      throw FsError(409, "ALREADY_EXISTS", fmt::format("{} already exists (upload with overwrite=true)", p.str()));
  }
  UniqueFd d(open_parent(p, true));
  std::string temp = "." + p.parts.back().substr(0, 200) + kTempMark + random_hex();
  auto w = std::make_unique<Writer>(d.get(), p.parts.back(), temp, overwrite, p.str());
  d.release();
  return w;
}

VolumeStore::Writer::Writer(int dir_fd, std::string name, std::string temp, bool overwrite, std::string shown)
    : dir_fd_(dir_fd), name_(std::move(name)), temp_(std::move(temp)), shown_(std::move(shown)), overwrite_(overwrite) {
  fd_ = ::openat(dir_fd_, temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    int err = errno;
    ::close(dir_fd_);
    throw FsError(500, "INTERNAL_ERROR", fmt::format("cannot write {}: {}", shown_, std::strerror(err)));
  }
}

VolumeStore::Writer::~Writer() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlinkat(dir_fd_, temp_.c_str(), 0);
  ::close(dir_fd_);
}

void VolumeStore::Writer::write(const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw FsError(500, "INTERNAL_ERROR", fmt::format("cannot write {}: {}", shown_, std::strerror(errno)));
    data += w;
    n -= static_cast<size_t>(w);
    bytes_ += static_cast<uint64_t>(w);
  }
}

void VolumeStore::Writer::commit() {
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    throw FsError(500, "INTERNAL_ERROR", fmt::format("cannot write {}: {}", shown_, std::strerror(errno)));
  }
  fd_ = -1;
  int rc = overwrite_ ? ::renameat(dir_fd_, temp_.c_str(), dir_fd_, name_.c_str())
                      : ::renameat2(dir_fd_, temp_.c_str(), dir_fd_, name_.c_str(), RENAME_NOREPLACE);
  if (rc != 0) {
    if (errno == EEXIST) throw FsError(409, "ALREADY_EXISTS", fmt::format("{} already exists", shown_));
    if (errno == EISDIR) throw FsError(409, "RESOURCE_CONFLICT", fmt::format("{} is a directory", shown_));
    throw FsError(500, "INTERNAL_ERROR", fmt::format("cannot write {}: {}", shown_, std::strerror(errno)));
  }
  committed_ = true;
  ::fsync(dir_fd_);
}

VolumeStore::Usage VolumeStore::usage(const VolumePath& p) const {
  Usage u;
  std::optional<Entry> e;
  try {
    e = stat(p);
  } catch (const FsError&) {
    return u;
  }
  if (!e) return u;
  u.exists = true;
  if (!e->is_directory) {
    u.files = 1;
    u.bytes = e->size;
    return u;
  }
  std::error_code ec;
  for (fs::recursive_directory_iterator it(fs::path(root_) / p.relative(), ec), end; !ec && it != end;
       it.increment(ec)) {
    auto st = it->symlink_status(ec);
    if (ec || !fs::is_regular_file(st) || is_temp_name(it->path().filename().string())) continue;
    u.files++;
    u.bytes += it->file_size(ec);
  }
  return u;
}

}  // namespace air::server
