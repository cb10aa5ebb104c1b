// Pieces shared by the hub client's files (not part of its interface).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "hub/cache.h"
#include "hub/http.h"
#include "hub/hub.h"

namespace air::hub {

// A request with retries and exponential backoff for network failures, 429 and 5xx; other answers return.
HttpResponse call_with_retries(const HttpRequest& request, const Options& options, const std::string& what);

// Throws the HubError for a non-2xx answer about `what` (a repo, or a file of it); `url` names the page.
[[noreturn]] void raise_for_status(const HttpResponse& r, const Repo& repo, const std::string& file, const Options& options);

// What a HEAD on /resolve/ says about one file.
struct FileMeta {
  std::string path, etag, commit, location;
  uint64_t size = 0;
};

FileMeta file_metadata(const Repo& repo, const std::string& commit, const std::string& path, const Options& options);

// Makes blobs/<etag> hold the file (downloading, resuming a .incomplete, verifying size and SHA-256), under
// the blob's lock. Returns the bytes fetched (0 when it was there already).
uint64_t fetch_blob(const Repo& repo, const CacheRepo& cache, const FileMeta& meta, const Options& options,
                    std::atomic<uint64_t>& progress);

std::string repo_url(const Repo& repo, const Options& options);

// Writes `text` to options.log (when set) under one lock: download threads and the progress line share it.
void log_text(const Options& options, const std::string& text);  // <endpoint>/[datasets/]org/name

}  // namespace air::hub
