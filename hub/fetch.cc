// One file: its metadata from a HEAD on /resolve/ (ETag or X-Linked-Etag, size, X-Repo-Commit, the blob
// URL in Location), then its bytes into blobs/<etag>.incomplete, resumed with Range after a cut, verified
// (size; SHA-256 when the ETag is one, as for LFS files) and renamed into place.
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <utility>

#include "hub/internal.h"

namespace air::hub {
namespace fs = std::filesystem;
namespace {

std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

bool is_sha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

struct Sha256 {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx{EVP_MD_CTX_new(), EVP_MD_CTX_free};
  Sha256() { EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr); }
  void update(const void* d, size_t n) { EVP_DigestUpdate(ctx.get(), d, n); }
  std::string hex() {
    unsigned char md[32];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx.get(), md, &n);
    static const char* h = "0123456789abcdef";
    std::string s;
    for (unsigned i = 0; i < n; ++i) s += {h[md[i] >> 4], h[md[i] & 15]};
    return s;
  }
};

std::string resolve_file_url(const Repo& repo, const std::string& rev, const std::string& path, const Options& o) {
  return repo_url(repo, o) + "/resolve/" + url_escape(rev, false) + "/" + url_escape(path, true);
}

// Hashes what a previous attempt left, so a resumed download is still verified end to end.
uint64_t hash_existing(const std::string& path, Sha256* sha) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 0;
  std::vector<char> buf(1 << 20);
  uint64_t n = 0;
  for (size_t got; (got = std::fread(buf.data(), 1, buf.size(), f)) > 0; n += got)
    if (sha) sha->update(buf.data(), got);
  std::fclose(f);
  return n;
}

[[noreturn]] void disk_full(const std::string& path, uint64_t have, uint64_t size, const Options& o) {
  throw HubError("disk full while downloading to " + path + " (" + std::to_string(have) + " of " + std::to_string(size) + " bytes)",
                 "free space under " + o.cache_dir + " or point HF_HUB_CACHE (or HF_HOME) at a larger disk; the download resumes where it stopped");
}

}  // namespace

FileMeta file_metadata(const Repo& repo, const std::string& commit, const std::string& path, const Options& o) {
  FileMeta m;
  m.path = path;
  std::string url = resolve_file_url(repo, commit, path, o);
  const std::string origin = url_origin(url);
  for (int hops = 0;; ++hops) {
    HttpRequest req{"HEAD", url, url_origin(url) == origin ? o.token : "", -1, {}};
    HttpResponse r = call_with_retries(req, o, "metadata of " + path);
    if (r.status >= 300 && r.status < 400 && !r.header("location").empty()) {
      std::string next = resolve_url(url, r.header("location"));
      // A redirect within the hub (a renamed repo) is followed; one to a blob store is where the bytes live.
      if (url_origin(next) == origin && r.header("x-linked-etag").empty() && hops < 5) {
        url = next;
        continue;
      }
      m.location = next;
    } else if (r.status < 200 || r.status >= 300) {
      raise_for_status(r, repo, path, o);
    } else {
      m.location = url;
    }
    m.etag = normalize_etag(!r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag"));
    std::string size = !r.header("x-linked-size").empty() ? r.header("x-linked-size") : r.header("content-length");
    m.commit = r.header("x-repo-commit");
    if (m.etag.empty() || m.etag.find('/') != std::string::npos || m.etag.find("..") != std::string::npos)
      throw HubError("the hub gave no usable ETag for " + path + " of " + repo.id, "HF_ENDPOINT (" + o.endpoint + ") may not be a Hugging Face hub");
    m.size = size.empty() ? 0 : std::stoull(size);
    return m;
  }
}

uint64_t fetch_blob(const Repo& repo, const CacheRepo& cache, const FileMeta& meta, const Options& o, std::atomic<uint64_t>& progress) {
  const std::string blob = blob_path(cache, meta.etag);
  std::error_code ec;
  if (fs::is_regular_file(blob, ec) && fs::file_size(blob, ec) == meta.size) return 0;
  FileLock lock((fs::path(cache.locks) / (meta.etag + ".lock")).string(), [&] {
    log_text(o, "hub: waiting for another process downloading " + meta.path + "\n");
  });
  if (fs::is_regular_file(blob, ec) && fs::file_size(blob, ec) == meta.size) return 0;  // the other process did
  fs::create_directories(fs::path(blob).parent_path(), ec);
  const std::string part = blob + ".incomplete";
  const bool verify = is_sha256(meta.etag);
  auto sha = std::make_unique<Sha256>();
  uint64_t have = hash_existing(part, verify ? sha.get() : nullptr);
  if (have > meta.size) {
    fs::remove(part, ec);
    have = 0;
    sha = std::make_unique<Sha256>();
  }
  const uint64_t resumed_from = have;
  const bool same_origin = url_origin(meta.location) == url_origin(o.endpoint);
  int delay = std::max(1, o.backoff_ms);
  for (int attempt = 0; have < meta.size || (meta.size == 0 && attempt == 0); ++attempt) {
    const uint64_t before = have;
    std::FILE* f = std::fopen(part.c_str(), have ? "ab" : "wb");
    if (!f) throw HubError("cannot write " + part + ": " + std::strerror(errno), "check the hub cache's permissions and free space");
    bool full = false, first_chunk = true;
    HttpRequest req{"GET", meta.location, same_origin ? o.token : "", have ? static_cast<int64_t>(have) : -1,
                    [&](const char* d, size_t n, int status) {
                      if (std::exchange(first_chunk, false) && status == 200 && before > 0) {  // Range ignored: start over
                        if (std::fflush(f) != 0 || ::ftruncate(fileno(f), 0) != 0 || std::fseek(f, 0, SEEK_SET) != 0) return false;
                        progress -= have - resumed_from;
                        have = 0;
                        sha = std::make_unique<Sha256>();
                      }
                      if (std::fwrite(d, 1, n, f) != n) {
                        full = errno == ENOSPC || errno == EDQUOT;
                        return false;
                      }
                      if (verify) sha->update(d, n);
                      have += n;
                      progress += n;
                      return true;
                    }};
    HttpResponse r = http_call(req);
    if (std::fclose(f) != 0 && (errno == ENOSPC || errno == EDQUOT)) full = true;
    if (full) disk_full(part, have, meta.size, o);
    if (r.status == 416) {  // asked past the end: what we have is stale
      fs::remove(part, ec);
      have = 0;
      sha = std::make_unique<Sha256>();
      continue;
    }
    if (r.status >= 300 && r.status != 0 && r.status != 429 && r.status < 500) raise_for_status(r, repo, meta.path, o);
    if (r.error.empty() && r.status >= 200 && r.status < 300) {
      if (meta.size == 0 || have >= meta.size) break;
      if (have > before) continue;  // a short body: ask for the rest
    }
    if (attempt >= o.retries)
      throw HubError("network error: downloading " + meta.path + " of " + repo.id + " failed after " + std::to_string(attempt + 1) +
                         " attempts (" + std::to_string(have) + " of " + std::to_string(meta.size) + " bytes): " +
                         (r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error),
                     "run again to resume; check the network and HF_ENDPOINT (" + o.endpoint + ")");
    log_text(o, "hub: " + meta.path + ": " + (r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error) + " after " +
                    std::to_string(have) + " bytes; resuming in " + std::to_string(delay) + " ms\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    delay = std::min(delay * 2, 8000);
  }
  uint64_t size = fs::file_size(part, ec);
  if (size != meta.size) {
    fs::remove(part, ec);
    throw HubError("downloaded " + meta.path + " of " + repo.id + " has " + std::to_string(size) + " bytes, the hub said " + std::to_string(meta.size),
                   "run again; if it persists, the mirror at " + o.endpoint + " serves a different file");
  }
  if (verify) {
    std::string got = sha->hex();
    if (got != meta.etag) {
      fs::remove(part, ec);
      throw HubError("downloaded " + meta.path + " of " + repo.id + " does not match its SHA-256 (" + got.substr(0, 12) + "... instead of " +
                         meta.etag.substr(0, 12) + "...)", "run again; the partial file was removed");
    }
  }
  fs::rename(part, blob, ec);
  if (ec) throw HubError("cannot move " + part + " into place: " + ec.message());
  return have - resumed_from;
}

}  // namespace air::hub
