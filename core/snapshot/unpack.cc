// unpack_snapshot: extracts an untrusted archive without letting any entry write, link or point outside
// the destination; everything lands in a temporary folder that is renamed into place only on success.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <vector>

#include "core/base/error.h"
#include "core/base/fd.h"
#include "core/snapshot/snapshot.h"

namespace air {
namespace {

namespace fs = std::filesystem;

std::string archive_text(struct archive* a) {
  const char* msg = archive_error_string(a);
  return msg ? msg : "unknown libarchive error";
}

Error unsafe(const std::string& entry, const std::string& why) {
  return Error("unsafe snapshot archive: entry '" + entry + "' " + why,
               "the archive was not written by air, or it was tampered with; nothing was unpacked");
}

// Splits an entry path into components, refusing absolute paths and '..'; "." and empty parts vanish.
std::vector<std::string> safe_components(const std::string& name) {
  if (!name.empty() && name[0] == '/') throw unsafe(name, "has an absolute path");
  if (name.size() >= PATH_MAX)  // PATH_MAX counts the NUL: a 4096-byte path is one the kernel cannot resolve
    throw unsafe(name.substr(0, 64) + "...", "has a path longer than the kernel resolves (" + std::to_string(PATH_MAX - 1) + " bytes)");
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    if (slash == std::string::npos) slash = name.size();
    std::string c = name.substr(start, slash - start);
    start = slash + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") throw unsafe(name, "has a '..' component");
    parts.push_back(std::move(c));
  }
  return parts;
}

// Components of a symlink target, '..' kept: the caller tracks the depth.
std::vector<std::string> split_target(const std::string& target) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= target.size()) {
    size_t slash = target.find('/', start);
    if (slash == std::string::npos) slash = target.size();
    std::string c = target.substr(start, slash - start);
    start = slash + 1;
    if (!c.empty() && c != ".") parts.push_back(std::move(c));
  }
  return parts;
}

std::string join(const std::vector<std::string>& parts, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

class Extractor {
 public:
  // budget: the disk the tree may use; free: what the destination's disk can give.
  Extractor(int root_fd, const UnpackLimits& limits, uint64_t budget, uint64_t free)
      : root_(root_fd), limits_(limits), budget_(budget), free_(free) {}
  void extract(struct archive* a, struct archive_entry* e);
  void check_symlinks() const;

 private:
  UniqueFd open_parent(const std::string& name, const std::vector<std::string>& parts, bool create) const;
  void write_file(struct archive* a, const std::string& name, int dirfd, const std::string& leaf, mode_t mode);

  // Counts `blocks_bytes` more of disk use; refuses past the budget or the free space.
  void charge(const std::string& name, uint64_t used_after) const;

  int root_;
  UnpackLimits limits_;
  uint64_t budget_, free_;
  uint64_t entries_ = 0;
  uint64_t bytes_ = 0;  // disk use so far, in whole blocks
  std::set<std::string> regular_files_;
  std::vector<std::string> symlinks_;
  // One copy buffer for every file, not zeroed: a fresh zeroed 1 MiB per file (a new mmap, 256 page faults
  // and a memset) was most of an agent's user-space CPU for a 51-file snapshot (docs/performance.md).
  std::unique_ptr<char[]> buf_;
  static constexpr size_t kBufBytes = 1 << 20;
};

constexpr uint64_t kBlock = 4096;
uint64_t blocks(uint64_t n) { return std::max<uint64_t>(1, (n + kBlock - 1) / kBlock) * kBlock; }

void Extractor::charge(const std::string& name, uint64_t used_after) const {
  if (used_after > budget_)
    throw unsafe(name, "makes the archive expand beyond " + std::to_string(budget_) + " bytes");
  if (used_after > free_)
    throw Error("not enough disk space to unpack the snapshot: entry '" + name + "' needs more than the " +
                    std::to_string(free_) + " bytes free",
                "free space on this node's disk; nothing was unpacked");
}

// Opens the folder that holds the entry, component by component, never following a symlink.
UniqueFd Extractor::open_parent(const std::string& name, const std::vector<std::string>& parts, bool create) const {
  UniqueFd dir(::fcntl(root_, F_DUPFD_CLOEXEC, 0));
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int fd = ::openat(dir.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(dir.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST)
        throw Error("cannot create '" + join(parts, i + 1) + "': " + std::strerror(errno));
      fd = ::openat(dir.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      if (errno == ELOOP || errno == ENOTDIR) throw unsafe(name, "would be written through a symlink or a file");
      throw Error("cannot open '" + join(parts, i + 1) + "': " + std::strerror(errno));
    }
    dir = UniqueFd(fd);
  }
  return dir;
}

void Extractor::write_file(struct archive* a, const std::string& name, int dirfd, const std::string& leaf,
                           mode_t mode) {
  int fd = ::openat(dirfd, leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) throw unsafe(name, "appears twice in the archive");
    throw Error("cannot create '" + name + "': " + std::strerror(errno));
  }
  UniqueFd guard(fd);
  if (!buf_) buf_.reset(new char[kBufBytes]);
  uint64_t size = 0;
  for (;;) {
    la_ssize_t n = archive_read_data(a, buf_.get(), kBufBytes);
    if (n < 0) throw Error(std::string("corrupt snapshot archive at '") + name + "': " + archive_text(a));
    if (n == 0) break;
    size += static_cast<uint64_t>(n);
    charge(name, bytes_ + blocks(size));
    for (const char* p = buf_.get(); n > 0;) {
      ssize_t w = ::write(fd, p, static_cast<size_t>(n));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw Error("cannot write '" + name + "': " + std::strerror(errno));
      p += w;
      n -= w;
    }
  }
  if (::fchmod(fd, mode) != 0) throw Error("cannot set the mode of '" + name + "': " + std::strerror(errno));
  charge(name, bytes_ + blocks(size));
  bytes_ += blocks(size);
}

void Extractor::extract(struct archive* a, struct archive_entry* e) {
  const char* raw = archive_entry_pathname(e);
  std::string name = raw ? raw : "";
  if (++entries_ > limits_.max_entries)
    throw unsafe(name, "exceeds the limit of " + std::to_string(limits_.max_entries) + " entries");
  std::vector<std::string> parts = safe_components(name);
  mode_t type = archive_entry_filetype(e);
  const char* hardlink = archive_entry_hardlink(e);
  if (parts.empty()) {
    if (type == AE_IFDIR) return;  // "./": the destination itself
    throw unsafe(name, "has an empty path");
  }
  std::string path = join(parts, parts.size());
  const std::string& leaf = parts.back();

  if (!hardlink && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
    const char* kind = type == AE_IFCHR ? "a character device" : type == AE_IFBLK ? "a block device"
                       : type == AE_IFIFO ? "a fifo" : type == AE_IFSOCK ? "a socket" : "of an unknown type";
    throw unsafe(name, std::string("is ") + kind + ": only files, folders and symlinks are allowed");
  }
  // Declared sizes are refused from the header, before any byte is written; folders and links take a block.
  if (!hardlink && type == AE_IFREG && archive_entry_size_is_set(e) && archive_entry_size(e) > 0)
    charge(name, bytes_ + blocks(static_cast<uint64_t>(archive_entry_size(e))));
  if (!hardlink && type != AE_IFREG) {
    charge(name, bytes_ + kBlock);
    bytes_ += kBlock;
  }

  UniqueFd dir = open_parent(name, parts, true);
  if (hardlink) {
    // A link entry with data of its own would overwrite the file it links to (libarchive's extractor
    // writes it there); air never writes such entries, so they are refused rather than half-honoured.
    if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0)
      throw unsafe(name, "is a hard link that carries data (" + std::to_string(archive_entry_size(e)) + " bytes)");
    std::string t = hardlink;
    if (!t.empty() && t[0] == '/') throw unsafe(name, "is a hard link to an absolute path (" + t + ")");
    std::vector<std::string> target = split_target(t);
    if (std::find(target.begin(), target.end(), "..") != target.end())
      throw unsafe(name, "is a hard link with a '..' component (" + t + ")");
    std::string tpath = join(target, target.size());
    if (!regular_files_.count(tpath)) throw unsafe(name, "is a hard link to '" + std::string(hardlink) + "', which is not a file unpacked before it");
    UniqueFd tdir = open_parent(hardlink, target, false);
    if (::linkat(tdir.get(), target.back().c_str(), dir.get(), leaf.c_str(), 0) != 0) {
      if (errno == EEXIST) throw unsafe(name, "appears twice in the archive");
      throw Error("cannot link '" + path + "': " + std::strerror(errno));
    }
    return;
  }
  if (type == AE_IFDIR) {
    if (::mkdirat(dir.get(), leaf.c_str(), 0755) != 0) {
      struct stat st;
      if (errno != EEXIST || ::fstatat(dir.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        throw unsafe(name, "is a folder where something else was already unpacked");
    }
    return;
  }
  if (type == AE_IFLNK) {
    const char* t = archive_entry_symlink(e);
    std::string target = t ? t : "";
    if (target.empty()) throw unsafe(name, "is a symlink with an empty target");
    if (target[0] == '/') throw unsafe(name, "is a symlink to an absolute path (" + target + ")");
    // Lexically: from the link's folder, the target must not climb above the destination.
    int depth = static_cast<int>(parts.size()) - 1;
    for (const auto& c : split_target(target)) {
      depth += c == ".." ? -1 : 1;
      if (depth < 0) throw unsafe(name, "is a symlink that points outside the destination (" + target + ")");
    }
    if (::symlinkat(target.c_str(), dir.get(), leaf.c_str()) != 0) {
      if (errno == EEXIST) throw unsafe(name, "appears twice in the archive");
      throw Error("cannot create symlink '" + path + "': " + std::strerror(errno));
    }
    symlinks_.push_back(path);
    return;
  }
  mode_t mode = (archive_entry_perm(e) & 0111) ? 0755 : 0644;
  write_file(a, name, dir.get(), leaf, mode);
  regular_files_.insert(path);
}

// Each symlink was lexically inside on its own, but chains of links can still lead out. The kernel
// resolves every link beneath the destination (openat2 RESOLVE_BENEATH) and says EXDEV when one escapes.
void Extractor::check_symlinks() const {
  for (const auto& path : symlinks_) {
    struct open_how how {};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = ::syscall(SYS_openat2, root_, path.c_str(), &how, sizeof how);
    if (fd >= 0) {
      ::close(static_cast<int>(fd));
      continue;
    }
    if (errno == ENOSYS || errno == EPERM) return;  // an old kernel or a seccomp filter: the lexical check stands
    if (errno == EXDEV) throw unsafe(path, "is a symlink that leads outside the destination through other links");
    // Every link is resolved by the kernel or refused: only a link to nothing (inside) is let stand.
    if (errno != ENOENT)
      throw unsafe(path, std::string("is a symlink the kernel cannot resolve (") + std::strerror(errno) + ")");
  }
}

// The destination must be new (or an empty folder): unpacking never mixes with older files.
void check_destination(const std::string& dest) {
  struct stat st;
  if (::lstat(dest.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw Error("cannot use '" + dest + "' as the unpack destination: " + std::strerror(errno));
  }
  std::error_code ec;
  if (!S_ISDIR(st.st_mode) || !fs::is_empty(dest, ec))
    throw Error("cannot unpack into '" + dest + "': it exists and is not an empty folder");
}

using ReaderPtr = std::unique_ptr<struct archive, int (*)(struct archive*)>;

void extract_all(const std::string& archive_path, int root_fd, const UnpackLimits& limits) {
  ReaderPtr a(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(a.get());
  archive_read_support_filter_zstd(a.get());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_none(a.get());
  if (archive_read_open_filename(a.get(), archive_path.c_str(), 1 << 20) != ARCHIVE_OK)
    throw Error("cannot read snapshot archive '" + archive_path + "': " + archive_text(a.get()));
  struct stat st {};
  uint64_t archive_size = ::stat(archive_path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  uint64_t by_ratio = std::max(limits.ratio_floor_bytes, archive_size > UINT64_MAX / std::max<uint64_t>(limits.max_ratio, 1)
                                                             ? UINT64_MAX : archive_size * limits.max_ratio);
  struct statvfs vfs {};
  uint64_t free = UINT64_MAX;
  if (::fstatvfs(root_fd, &vfs) == 0) {
    uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    free = avail > limits.keep_free_bytes ? avail - limits.keep_free_bytes : 0;
  }
  Extractor x(root_fd, limits, std::min(limits.max_total_bytes, by_ratio), free);
  for (;;) {
    struct archive_entry* e = nullptr;
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN)
      throw Error("corrupt snapshot archive '" + archive_path + "': " + archive_text(a.get()));
    x.extract(a.get(), e);
  }
  x.check_symlinks();
}

}  // namespace

void unpack_snapshot(const std::string& archive_path, const std::string& dest, const UnpackLimits& limits) {
  fs::path d = fs::path(dest).lexically_normal();
  if (d.filename().empty()) d = d.parent_path();
  check_destination(d.string());
  fs::path parent = d.parent_path().empty() ? fs::path(".") : d.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  std::string tmpl = (parent / ("." + d.filename().string() + ".unpack-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw Error("cannot create a folder next to '" + dest + "': " + std::strerror(errno));
  try {
    UniqueFd root(::open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (root.get() < 0) throw Error("cannot open '" + tmpl + "': " + std::strerror(errno));
    extract_all(archive_path, root.get(), limits);
    if (::fchmod(root.get(), 0755) != 0) throw Error("cannot set the mode of '" + tmpl + "': " + std::strerror(errno));
    check_destination(d.string());
    ::rmdir(d.c_str());  // an empty folder that was there: replaced by the unpacked tree
    if (::rename(tmpl.c_str(), d.c_str()) != 0)
      throw Error("cannot move the unpacked snapshot to '" + dest + "': " + std::strerror(errno));
  } catch (...) {
    fs::remove_all(tmpl, ec);  // does not follow symlinks
    throw;
  }
}

}  // namespace air
