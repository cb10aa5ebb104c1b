// SHA-256 through OpenSSL's SHA256_* functions (the CPU's SHA extensions where present). Not EVP: in
// OpenSSL 3 the first EVP digest of a process loads the default provider and builds its name maps, ~0.9 ms
// of CPU, paid by every `air run` and node agent for one small hash; SHA256_* calls the same block code
// directly (400 MB hash the same 233 ms either way; docs/performance.md). Deprecated in OpenSSL 3, not gone.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "core/base/sha256.h"

#include <fcntl.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "core/base/error.h"

namespace air {

Sha256::Sha256() : ctx_(new SHA256_CTX) {
  if (SHA256_Init(static_cast<SHA256_CTX*>(ctx_)) != 1) {
    delete static_cast<SHA256_CTX*>(ctx_);
    throw std::runtime_error("OpenSSL: cannot initialise SHA-256");
  }
}

Sha256::~Sha256() { delete static_cast<SHA256_CTX*>(ctx_); }

void Sha256::update(const void* data, size_t n) { SHA256_Update(static_cast<SHA256_CTX*>(ctx_), data, n); }

std::string Sha256::hex_digest() {
  unsigned char md[SHA256_DIGEST_LENGTH];
  const unsigned int len = SHA256_DIGEST_LENGTH;
  SHA256_Final(md, static_cast<SHA256_CTX*>(ctx_));
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

std::string sha256_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read '" + path + "': " + std::strerror(errno));
  Sha256 h;
  constexpr size_t kBuf = 1 << 20;
  std::unique_ptr<char[]> buf(new char[kBuf]);  // not zeroed: it is read into
  for (;;) {
    ssize_t n = ::read(fd, buf.get(), kBuf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw Error("cannot read '" + path + "': " + std::strerror(err));
    }
    if (n == 0) break;
    h.update(buf.get(), static_cast<size_t>(n));
  }
  ::close(fd);
  return h.hex_digest();
}

}  // namespace air
