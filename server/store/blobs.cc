// Blob store with verify-before-rename uploads.
#include "server/store/blobs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/writeback.h"

namespace air::server {

namespace fs = std::filesystem;

namespace {
std::string hex(const unsigned char* p, unsigned n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}
}  // namespace

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return hex(md, n);
}

BlobStore::BlobStore(std::string dir) : dir_(std::move(dir)) { fs::create_directories(dir_ + "/tmp"); }

std::string BlobStore::path(const std::string& digest) const {
  return dir_ + "/sha256/" + digest.substr(0, 2) + "/" + digest;
}

bool BlobStore::has(const std::string& digest) const { return is_sha256_hex(digest) && fs::exists(path(digest)); }

uint64_t BlobStore::size(const std::string& digest) const {
  std::error_code ec;
  auto n = fs::file_size(path(digest), ec);
  return ec ? 0 : n;
}

std::unique_ptr<BlobWriter> BlobStore::begin(const std::string& digest, uint64_t max_bytes) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = dir_ + "/tmp/" + digest + "." + std::to_string(::getpid()) + "." + std::to_string(++counter);
  return std::make_unique<BlobWriter>(tmp, path(digest), digest, max_bytes);
}

std::string BlobStore::adopt(const std::string& digest, const std::string& file, uint64_t max_bytes) {
  if (!is_sha256_hex(digest)) return "not a SHA-256 digest";
  if (has(digest)) return "";
  int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? "no such file" : std::string("cannot open it: ") + std::strerror(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::string("cannot stat it: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (st.st_uid != ::geteuid()) return "not owned by the workspace's user";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by others than its owner";
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return "larger than this workspace accepts";
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  uint64_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf.get(), 1 << 20, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      EVP_MD_CTX_free(ctx);
      return std::string("cannot read it: ") + std::strerror(errno);
    }
    if (n == 0) break;
    EVP_DigestUpdate(ctx, buf.get(), static_cast<size_t>(n));
    off += static_cast<uint64_t>(n);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  if (off != static_cast<uint64_t>(st.st_size)) return "it changed while being read";
  if (hex(md, len) != digest) return "its bytes do not hash to the digest";
  // The inode read above, by its descriptor (a rename of the path since would not matter), linked under a
  // temporary name, made durable, then renamed into place as an upload's commit does.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = dir_ + "/tmp/" + digest + ".adopt." + std::to_string(::getpid()) + "." + std::to_string(++counter);
  std::string proc = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0)
    return std::string("cannot link it into the store: ") + std::strerror(errno);
  if (::fsync(fd) != 0) {
    ::unlink(tmp.c_str());
    return std::string("cannot make it durable: ") + std::strerror(errno);
  }
  std::error_code ec;
  fs::create_directories(fs::path(path(digest)).parent_path(), ec);
  fs::rename(tmp, path(digest), ec);
  if (ec) {
    ::unlink(tmp.c_str());
    return "cannot link it into the store: " + ec.message();
  }
  return "";
}

BlobWriter::BlobWriter(std::string tmp, std::string final_path, std::string digest, uint64_t max_bytes)
    : tmp_(std::move(tmp)), final_(std::move(final_path)), digest_(std::move(digest)), max_(max_bytes) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd_ < 0) throw Error("cannot write blob " + tmp_);
  auto* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  ctx_ = ctx;
}

BlobWriter::~BlobWriter() {
  if (fd_ >= 0) ::close(fd_);
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
  if (!committed_) ::unlink(tmp_.c_str());
}

bool BlobWriter::write(const char* data, size_t n) {
  bytes_ += n;
  if (bytes_ > max_) return false;
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n);
  unchecked_ += n;
  if (unchecked_ >= (1u << 20)) {  // core/base/writeback.h: the last free space is the database's
    if (!leaves_disk_reserve(fs::path(tmp_).parent_path().string(), unchecked_)) {
      errno_ = ENOSPC;
      return false;
    }
    unchecked_ = 0;
  }
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd_, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      errno_ = w < 0 ? errno : ENOSPC;
      return false;
    }
    done += static_cast<size_t>(w);
  }
  return true;
}

void BlobWriter::commit() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len);
  std::string got = hex(md, len);
  if (got != digest_)
    throw Error("upload does not match its digest: named " + digest_ + ", content hashes to " + got);
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    throw Error("cannot write blob " + tmp_);
  }
  fd_ = -1;
  fs::create_directories(fs::path(final_).parent_path());
  fs::rename(tmp_, final_);
  committed_ = true;
}

}  // namespace air::server
