// place_cached_code (launcher/agent/code_cache.h): hit = a walk of the cached tree making folders and hard
// links; miss = the same after one safe unpack into the cache, under flock on the cache folder.
#include "core/base/fd.h"
#include "launcher/agent/code_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "core/base/error.h"

namespace air::launcher {

namespace fs = std::filesystem;

namespace {

Error sys_error(const std::string& what, const std::string& path) {
  return Error("cannot " + what + " " + path + ": " + std::strerror(errno));
}

bool is_digest_name(const char* name) {
  size_t n = std::strlen(name);
  return n == 64 && std::all_of(name, name + n, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// Mirrors the folder open at `src` into the folder open at `dst`: folders made (0755), regular files
// hard-linked, symlinks made anew (their targets were checked when the archive was unpacked).
void link_tree(int src, int dst, const std::string& shown, size_t& links) {
  UniqueFd list(::dup(src));
  if (list.get() < 0) throw sys_error("read the cached folder", shown);
  DIR* d = ::fdopendir(list.get());
  if (!d) throw sys_error("read the cached folder", shown);
  list.release();  // owned by d now
  struct Closer {
    DIR* d;
    ~Closer() { ::closedir(d); }
  } closer{d};
  while (dirent* e = ::readdir(d)) {
    const char* name = e->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    unsigned type = e->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st {};
      if (::fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) != 0) throw sys_error("stat", shown + "/" + name);
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    const std::string path = shown + "/" + name;
    if (type == DT_DIR) {
      if (::mkdirat(dst, name, 0755) != 0) throw sys_error("create the folder", path);
      UniqueFd s(::openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      UniqueFd t(::openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (s.get() < 0 || t.get() < 0) throw sys_error("open the folder", path);
      link_tree(s.get(), t.get(), path, links);
    } else if (type == DT_REG) {
      if (::linkat(src, name, dst, name, 0) != 0) throw sys_error("link", path);
      ++links;
    } else if (type == DT_LNK) {
      char target[PATH_MAX];
      ssize_t n = ::readlinkat(src, name, target, sizeof target - 1);
      if (n < 0) throw sys_error("read the symlink", path);
      target[n] = '\0';
      if (::symlinkat(target, dst, name) != 0) throw sys_error("create the symlink", path);
    }  // nothing else is ever unpacked
  }
}

// Entries beyond the `keep` most recently used go (oldest first), and leftovers of an unpack that died
// (nobody else unpacks while the lock is held). Best effort: a node that is linking from an entry removed
// here falls back to unpacking its own copy.
void evict(const std::string& cache_dir, const std::string& current, size_t keep) {
  std::vector<std::pair<int64_t, std::string>> entries;
  std::error_code ec;
  for (auto it = fs::directory_iterator(cache_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(".", 0) == 0 && name.find(".unpack-") != std::string::npos) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
      continue;
    }
    if (!is_digest_name(name.c_str()) || name == current) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    entries.emplace_back(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, name);
  }
  if (entries.size() + 1 <= keep) return;
  std::sort(entries.begin(), entries.end());  // oldest first
  size_t drop = entries.size() + 1 - keep;
  for (size_t i = 0; i < drop && i < entries.size(); ++i) {
    std::error_code ignored;
    fs::remove_all(fs::path(cache_dir) / entries[i].second, ignored);
  }
}

}  // namespace

CodeCachePlacement place_cached_code(const std::string& cache_dir, const std::string& digest,
                                     const std::function<std::string()>& archive_path, const std::string& code_dir,
                                     const UnpackLimits& limits, size_t keep) {
  if (!is_digest_name(digest.c_str())) throw Error("not a snapshot digest: '" + digest + "'");
  CodeCachePlacement out;
  const std::string entry = cache_dir + "/" + digest;
  struct stat st {};
  if (::lstat(entry.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::error_code ec;
    fs::create_directories(cache_dir, ec);
    if (ec) throw Error("cannot create the code cache " + cache_dir + ": " + ec.message());
    ::chmod(cache_dir.c_str(), 0700);
    UniqueFd lock(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (lock.get() < 0) throw sys_error("open the code cache", cache_dir);
    while (::flock(lock.get(), LOCK_EX) != 0)
      if (errno != EINTR) throw sys_error("lock the code cache", cache_dir);
    if (::lstat(entry.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {  // nobody unpacked it while we waited
      evict(cache_dir, digest, keep);
      unpack_snapshot(archive_path(), entry, limits);
      out.unpacked = true;
    }
  }  // the lock is released here: linking needs none
  if (!out.unpacked) ::utimensat(AT_FDCWD, entry.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // most recently used
  if (::mkdir(code_dir.c_str(), 0755) != 0 && errno != EEXIST) throw sys_error("create", code_dir);
  UniqueFd src(::open(entry.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (src.get() < 0) throw sys_error("open the cached snapshot", entry);
  UniqueFd dst(::open(code_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dst.get() < 0) throw sys_error("open", code_dir);
  link_tree(src.get(), dst.get(), code_dir, out.links);
  return out;
}

}  // namespace air::launcher
