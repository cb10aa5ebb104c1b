// scan_snapshot: walks the snapshot root with git's ignore semantics (plus .airignore), recording the
// included files with the metadata the archive and its cache need, and what each rule excluded.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/base/fd.h"
#include "core/snapshot/ignore.h"
#include "core/snapshot/snapshot.h"

namespace air {
namespace {

namespace fs = std::filesystem;

struct Entry {
  std::string name;
  unsigned char type;  // DT_*
};

std::string errno_text(int err) { return std::strerror(err); }

Error read_error(const std::string& what, int err) {
  return Error("cannot read " + what + ": " + errno_text(err),
               "fix its permissions, or exclude it with a line in .airignore at the snapshot root");
}

// Lists a directory (without "." and ".."). Takes ownership of fd.
std::vector<Entry> list_dir(int fd, const std::string& shown) {
  DIR* d = ::fdopendir(fd);
  if (!d) {
    int err = errno;
    ::close(fd);
    throw read_error("directory '" + shown + "'", err);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> guard(d, ::closedir);
  std::vector<Entry> out;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) out.push_back({e->d_name, e->d_type});
    errno = 0;
  }
  if (errno) throw read_error("directory '" + shown + "'", errno);
  return out;
}

std::string read_small_file(int dirfd, const std::string& name, const std::string& shown, size_t limit) {
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOENT) return {};  // git does not follow a symlinked .gitignore
    throw read_error("'" + shown + "'", errno);
  }
  UniqueFd guard(fd);
  std::string out;
  char buf[65536];
  while (out.size() < limit) {
    ssize_t n = ::read(fd, buf, std::min(sizeof buf, limit - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw read_error("'" + shown + "'", errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Lexically resolves `target` relative to the folder `dir` ("" or "a/b/"); false when it leaves the root.
bool resolve_inside(const std::string& dir, const std::string& target, std::string* out) {
  std::vector<std::string> parts;
  auto feed = [&](std::string_view s) {
    while (!s.empty()) {
      size_t slash = s.find('/');
      std::string_view c = s.substr(0, slash);
      s.remove_prefix(slash == std::string_view::npos ? s.size() : slash + 1);
      if (c.empty() || c == ".") continue;
      if (c == "..") {
        if (parts.empty()) return false;
        parts.pop_back();
      } else {
        parts.emplace_back(c);
      }
    }
    return true;
  };
  if (!feed(dir) || !feed(target)) return false;
  out->clear();
  for (const auto& p : parts) *out += (out->empty() ? "" : "/") + p;
  return true;
}

// The relative target that leads from a link in folder `dir` ("" or "a/b/") to root-relative `to`.
std::string relative_link(const std::string& dir, const std::string& to) {
  std::vector<std::string_view> from_parts, to_parts;
  auto split = [](std::string_view s, std::vector<std::string_view>& out) {
    while (!s.empty()) {
      size_t slash = s.find('/');
      if (slash != 0) out.push_back(s.substr(0, slash));
      s.remove_prefix(slash == std::string_view::npos ? s.size() : slash + 1);
    }
  };
  split(dir, from_parts);
  split(to, to_parts);
  size_t common = 0;
  while (common < from_parts.size() && common < to_parts.size() && from_parts[common] == to_parts[common]) ++common;
  std::string out;
  for (size_t i = common; i < from_parts.size(); ++i) out += "../";
  for (size_t i = common; i < to_parts.size(); ++i) out += std::string(to_parts[i]) + "/";
  if (out.empty()) return ".";
  out.pop_back();
  return out;
}

bool readable(int dirfd, const std::string& name, const struct stat& st) {
  if (st.st_mode & S_IROTH) return true;
  if (st.st_uid == ::geteuid() && (st.st_mode & S_IRUSR)) return true;
  return ::faccessat(dirfd, name.c_str(), R_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0;
}

class Walker {
 public:
  Walker(SnapshotManifest& m, std::string real_root, bool ignore_files)
      : m_(m), real_root_(std::move(real_root)), ignore_files_(ignore_files) {}

  void walk(int fd, const std::string& rel, bool inside);
  // Stats the files the walk found (on every core for a big tree) and records them in walk order.
  void add_found(int root_fd);
  const IgnoreStack& stack() const { return stack_; }
  const std::vector<uint64_t>& counts() const { return counts_; }

 private:
  enum class Scope { kOutside, kAncestor, kInside };
  Scope child_scope(const std::string& path) const;
  void add_entry(int root_fd, const std::string& path, const struct stat& st);
  void add_symlink(int root_fd, const std::string& path, const struct stat& st);
  uint64_t count_files(int dirfd, const std::string& name);
  void count(int rule, uint64_t n) {
    if (counts_.size() <= static_cast<size_t>(rule)) counts_.resize(rule + 1);
    counts_[rule] += n;
  }

  SnapshotManifest& m_;
  std::string real_root_;
  bool ignore_files_;  // honour .gitignore/.airignore (off for a git export: every file there is tracked)
  IgnoreStack stack_;
  std::vector<uint64_t> counts_;
  std::vector<std::string> found_;  // non-directory entries the walk kept, root-relative, in walk order
};

Walker::Scope Walker::child_scope(const std::string& path) const {
  if (m_.include_paths.empty()) return Scope::kInside;
  Scope best = Scope::kOutside;
  for (const auto& inc : m_.include_paths) {
    if (inc == path) return Scope::kInside;
    if (inc.size() > path.size() && inc.compare(0, path.size(), path) == 0 && inc[path.size()] == '/')
      best = Scope::kAncestor;
  }
  return best;
}

// rel is "" for the root, else "a/b/". inside: the folder is within the snapshot's scope (the root, or
// inside an include path), as opposed to a folder we only pass through on the way to an include path.
void Walker::walk(int fd, const std::string& rel, bool inside) {
  int dirfd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);  // list_dir consumes fd; the *at calls need their own
  if (dirfd < 0) throw read_error("directory '" + rel + "'", errno);
  UniqueFd dir_guard(dirfd);
  std::vector<Entry> entries = list_dir(fd, rel.empty() ? "." : rel.substr(0, rel.size() - 1));

  auto rules_of = [&](const char* file) {
    bool present = std::any_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == file; });
    if (!present || !ignore_files_) return std::vector<IgnoreRule>{};
    return parse_ignore_rules(read_small_file(dirfd, file, rel + file, 16 << 20), rel + file);
  };
  stack_.push(rel, rules_of(".gitignore"), rules_of(".airignore"));

  for (const Entry& e : entries) {
    std::string path = rel + e.name;
    Scope scope = inside ? Scope::kInside : child_scope(path);
    if (scope == Scope::kOutside) continue;
    bool is_dir = e.type == DT_DIR;
    if (e.type == DT_UNKNOWN) {
      struct stat st;
      if (::fstatat(dirfd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throw read_error("'" + path + "'", errno);
      is_dir = S_ISDIR(st.st_mode);
    }
    // Folders on the way to an include path, and the include path itself, are named on purpose: only
    // .git stays out. Everything below them follows the ignore rules.
    bool named = !inside && scope == Scope::kInside;
    bool passing = scope == Scope::kAncestor || named;
    IgnoreStack::Decision d = stack_.decide(path, is_dir);
    if (d.excluded && (!passing || d.rule == stack_.builtin_git_rule())) {
      count(d.rule, is_dir ? count_files(dirfd, e.name) : 1);
      continue;
    }
    if (!is_dir) {
      found_.push_back(std::move(path));
      continue;
    }
    int sub = ::openat(dirfd, e.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) throw read_error("directory '" + path + "'", errno);
    walk(sub, path + "/", scope == Scope::kInside);
  }
  stack_.pop(rel);
}

uint64_t Walker::count_files(int dirfd, const std::string& name) {
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;  // excluded anyway: an unreadable excluded folder is not an error
  int again = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (again < 0) {
    ::close(fd);
    return 0;
  }
  UniqueFd guard(again);
  std::vector<Entry> entries;
  try {
    entries = list_dir(fd, name);
  } catch (const Error&) {
    return 0;
  }
  uint64_t n = 0;
  for (const Entry& e : entries) {
    bool is_dir = e.type == DT_DIR;
    if (e.type == DT_UNKNOWN) {
      struct stat st;
      is_dir = ::fstatat(again, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    n += is_dir ? count_files(again, e.name) : 1;
  }
  return n;
}

// The walk lists folders and decides what the rules keep; the lstat of every kept file (~45% of a scan of
// 20,000 files, one thread) runs here afterwards, split over the cores for a big tree: an unchanged tree's
// re-submit is this scan and nothing else. Paths are resolved from the root (the walk opened each folder
// without following links; what the archive's reader opens is resolved the same way).
void Walker::add_found(int root_fd) {
  struct Stat {
    struct stat st;
    int err;
  };
  std::vector<Stat> stats(found_.size());
  auto stat_range = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      stats[i].err = ::fstatat(root_fd, found_[i].c_str(), &stats[i].st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
  };
  // A thread costs ~50 us to start: worth it from a few thousand files (each lstat is ~2 us).
  constexpr size_t kFilesPerThread = 2048;
  const size_t threads =
      std::min<size_t>(static_cast<size_t>(snapshot_threads()), std::max<size_t>(1, found_.size() / kFilesPerThread));
  std::vector<std::thread> running;
  const size_t per = found_.size() / threads + 1;
  for (size_t t = 1; t < threads; ++t) {
    const size_t begin = std::min(found_.size(), t * per), end = std::min(found_.size(), (t + 1) * per);
    try {
      running.emplace_back(stat_range, begin, end);
    } catch (const std::system_error&) {
      stat_range(begin, end);  // no thread to be had (a process or memory limit): this one does its share
    }
  }
  stat_range(0, std::min(found_.size(), per));
  for (auto& t : running) t.join();

  m_.files.reserve(found_.size());
  for (size_t i = 0; i < found_.size(); ++i) {
    if (stats[i].err) throw read_error("'" + found_[i] + "'", stats[i].err);
    add_entry(root_fd, found_[i], stats[i].st);
  }
  found_.clear();
}

void Walker::add_entry(int root_fd, const std::string& path, const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return add_symlink(root_fd, path, st);
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode)   ? "a fifo"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISDIR(st.st_mode)  ? "a directory that changed during the scan"
                                              : "a device file";
    m_.skipped.push_back({path, std::string(kind) + ": only regular files and symlinks are archived"});
    return;
  }
  if (!readable(root_fd, path, st)) throw read_error("'" + path + "'", EACCES);
  SnapshotFile f;
  f.path = path;
  f.size = static_cast<uint64_t>(st.st_size);
  f.executable = (st.st_mode & 0111) != 0;
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  f.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  f.inode = st.st_ino;
  std::string base = path.substr(path.rfind('/') + 1);  // the whole path when it has no '/'
  if (base == ".npmrc" || base == ".pypirc") {
    if (looks_like_credential(path, read_small_file(root_fd, path, path, 64 << 10))) m_.credential_like.push_back(path);
  } else if (looks_like_credential(path, {})) {
    m_.credential_like.push_back(path);
  }
  m_.files.push_back(std::move(f));
}

void Walker::add_symlink(int root_fd, const std::string& path, const struct stat& st) {
  std::string target(PATH_MAX, '\0');
  ssize_t n = ::readlinkat(root_fd, path.c_str(), target.data(), target.size());
  if (n < 0) throw read_error("symlink '" + path + "'", errno);
  target.resize(static_cast<size_t>(n));
  std::string dir = path.substr(0, path.rfind('/') + 1);
  if (path.find('/') == std::string::npos) dir.clear();
  std::string stored = target;
  std::string resolved;
  bool inside = false;
  if (!target.empty() && target[0] == '/') {
    // An absolute link into the root is stored relative, so it keeps working wherever it is unpacked.
    std::string norm = fs::path(target).lexically_normal().string();
    if (norm.compare(0, real_root_.size() + 1, real_root_ + "/") == 0 &&
        resolve_inside("", norm.substr(real_root_.size() + 1), &resolved)) {
      inside = true;
      stored = relative_link(dir, resolved);
    }
  } else {
    inside = !target.empty() && resolve_inside(dir, target, &resolved);
  }
  if (inside) {
    // Lexically inside is not enough: the path may pass through another symlink that leads out.
    char real[PATH_MAX];
    if (::realpath((real_root_ + "/" + path).c_str(), real)) {
      std::string r = real;
      inside = r == real_root_ || r.compare(0, real_root_.size() + 1, real_root_ + "/") == 0;
    }
  }
  if (!inside) {
    m_.skipped.push_back({path, "symlink to a path outside the snapshot root (" + target + ")"});
    return;
  }
  SnapshotFile f;
  f.path = path;
  f.symlink = true;
  f.link_target = stored;
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  f.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  f.inode = st.st_ino;
  m_.files.push_back(std::move(f));
}

std::vector<std::string> normalize_include_paths(const std::vector<std::string>& in, const std::string& root) {
  std::vector<std::string> out;
  for (const auto& raw : in) {
    std::string p;
    if (raw.empty() || raw[0] == '/' || !resolve_inside("", raw, &p))
      throw usage_error("include path '" + raw + "' must be relative to the snapshot root and stay inside it");
    if (p.empty()) return {};  // "." includes everything
    struct stat st;
    if (::lstat((root + "/" + p).c_str(), &st) != 0)
      throw usage_error("include path '" + raw + "' does not exist under " + root);
    out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Orders rule counts by where they are written: built-in first, then by file, then by line.
bool source_less(const IgnoreRuleCount& a, const IgnoreRuleCount& b) {
  auto key = [](const IgnoreRuleCount& c) {
    size_t colon = c.source.rfind(':');
    if (c.source == "built-in" || colon == std::string::npos) return std::make_tuple(0, c.source, 0L);
    return std::make_tuple(1, c.source.substr(0, colon), std::strtol(c.source.c_str() + colon + 1, nullptr, 10));
  };
  return key(a) < key(b);
}

}  // namespace

SnapshotManifest scan_snapshot(const std::string& root, const std::vector<std::string>& include_paths) {
  return scan_snapshot(root, include_paths, true);
}

SnapshotManifest scan_snapshot(const std::string& root, const std::vector<std::string>& include_paths,
                               bool ignore_files) {
  SnapshotManifest m;
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  m.scanned_at_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) throw usage_error("snapshot root does not exist: " + root);
  if (!S_ISDIR(st.st_mode)) throw usage_error("snapshot root must be a directory: " + root);
  char real[PATH_MAX];
  if (!::realpath(root.c_str(), real)) throw read_error("snapshot root '" + root + "'", errno);
  m.root = real;
  m.include_paths = normalize_include_paths(include_paths, m.root);

  int fd = ::open(m.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw read_error("snapshot root '" + m.root + "'", errno);
  Walker walker(m, m.root, ignore_files);
  UniqueFd root_fd(::fcntl(fd, F_DUPFD_CLOEXEC, 0));  // walk() takes fd
  if (!root_fd.valid()) throw read_error("snapshot root '" + m.root + "'", errno);
  walker.walk(fd, "", m.include_paths.empty());
  walker.add_found(root_fd.get());

  std::sort(m.files.begin(), m.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  for (const auto& f : m.files) m.total_bytes += f.size;
  std::sort(m.credential_like.begin(), m.credential_like.end());
  std::sort(m.skipped.begin(), m.skipped.end(), [](const auto& a, const auto& b) { return a.path < b.path; });

  std::vector<SnapshotFile> by_size;
  for (const auto& f : m.files) {
    SnapshotFile s;
    s.path = f.path;
    s.size = f.size;
    by_size.push_back(std::move(s));
  }
  size_t k = std::min<size_t>(10, by_size.size());
  std::partial_sort(by_size.begin(), by_size.begin() + k, by_size.end(), [](const auto& a, const auto& b) {
    return a.size != b.size ? a.size > b.size : a.path < b.path;
  });
  by_size.resize(k);
  m.largest = std::move(by_size);

  const auto& rules = walker.stack().rules();
  const auto& counts = walker.counts();
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    m.excluded.push_back({rules[i].source, rules[i].pattern, counts[i]});
    m.files_excluded += counts[i];
  }
  std::sort(m.excluded.begin(), m.excluded.end(), source_less);
  return m;
}

}  // namespace air
