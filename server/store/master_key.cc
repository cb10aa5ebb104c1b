// Master key file handling. POSIX calls rather than std::filesystem: we need O_EXCL, O_NOFOLLOW, fstat on
// the open descriptor (no check-then-open race) and link(2) for an atomic, non-clobbering publish.
#include "core/base/fd.h"
#include "server/store/master_key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/base/error.h"

namespace air::server {

namespace {

std::string errno_text() { return std::strerror(errno); }

bool read_exact(int fd, unsigned char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  unsigned char extra;
  return ::read(fd, &extra, 1) == 0;  // exactly n bytes, no more
}

bool write_all(int fd, const unsigned char* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

MasterKey read_key(const std::string& path, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(fmt::format("cannot stat master key {}: {}", path, errno_text()));
  const std::string fix = fmt::format("run 'chmod 600 {}' if you trust its contents", path);
  if (!S_ISREG(st.st_mode)) throw Error(fmt::format("master key {} is not a regular file", path));
  if (st.st_uid != ::geteuid())
    throw Error(fmt::format("master key {} belongs to another user (uid {})", path, st.st_uid),
                "the workspace must own its key file");
  if ((st.st_mode & 077) != 0)
    throw Error(fmt::format("master key {} is accessible by group or others (mode {:o}); refusing to use it",
                            path, st.st_mode & 0777),
                fix);
  std::array<unsigned char, MasterKey::kSize> bytes{};
  if (!read_exact(fd, bytes.data(), bytes.size()))
    throw Error(fmt::format("master key {} is not {} bytes long", path, MasterKey::kSize),
                "restore the key from a backup; without it stored secrets cannot be decrypted");
  MasterKey key(bytes);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return key;
}

// Writes a fresh key to a private temporary file and links it to `path`. Returns false when another
// process published a key first (EEXIST): the caller then reads that one.
bool create_key(const std::string& path) {
  unsigned char salt[8];
  if (RAND_bytes(salt, sizeof salt) != 1) throw Error("cannot generate a master key: the OS random source failed");
  std::string tmp = fmt::format("{}.tmp.{}.{:02x}", path, ::getpid(), fmt::join(salt, ""));
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) throw Error(fmt::format("cannot create master key {}: {}", tmp, errno_text()));
  std::array<unsigned char, MasterKey::kSize> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    ::unlink(tmp.c_str());
    throw Error("cannot generate a master key: the OS random source failed");
  }
  bool ok = ::fchmod(fd.get(), 0600) == 0 && write_all(fd.get(), bytes.data(), bytes.size()) &&
            ::fsync(fd.get()) == 0;
  OPENSSL_cleanse(bytes.data(), bytes.size());
  if (!ok) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot write master key {}: {}", tmp, why));
  }
  int rc = ::link(tmp.c_str(), path.c_str());
  int link_errno = errno;
  ::unlink(tmp.c_str());
  if (rc == 0) return true;
  if (link_errno == EEXIST) return false;
  throw Error(fmt::format("cannot create master key {}: {}", path, std::strerror(link_errno)));
}

}  // namespace

MasterKey::~MasterKey() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

std::string master_key_path_for(const std::string& db_path) {
  auto dir = std::filesystem::path(db_path).parent_path();
  return (dir.empty() ? std::filesystem::path("secrets.key") : dir / "secrets.key").string();
}

MasterKey load_or_create_master_key(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() >= 0) return read_key(path, fd.get());
    if (errno == ELOOP) throw Error(fmt::format("master key {} is a symbolic link; refusing to use it", path));
    if (errno != ENOENT) throw Error(fmt::format("cannot open master key {}: {}", path, errno_text()));
    create_key(path);  // either ours or a racing creator's key is now in place; read it
  }
  throw Error(fmt::format("cannot create or read master key {}", path));
}

}  // namespace air::server
