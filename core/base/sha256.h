// SHA-256 (OpenSSL EVP), streamed: snapshot digests, upload checks, token hashing.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace air {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Lowercase hex of the digest; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  void* ctx_;  // EVP_MD_CTX, kept out of the header
};

std::string sha256_hex(std::string_view data);
// Hashes a file in fixed-size reads (never the whole file in memory). Throws air::Error naming it.
std::string sha256_file(const std::string& path);

}  // namespace air
