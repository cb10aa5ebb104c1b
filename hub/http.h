// The few HTTP calls the hub client makes, on libcurl: a request that returns status, headers and a small
// body, and a download that appends to a file (for Range resumes). Redirects are followed by the caller,
// so that the token is sent to the hub only, never to the host a blob URL points at.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

namespace air::hub {

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; the last value wins
  std::string body;
  std::string error;  // libcurl's reason when there was no HTTP answer (status 0) or the transfer broke
  std::string header(const std::string& name) const;
};

struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  std::string token;  // sent as Authorization: Bearer only when not empty
  int64_t range_from = -1;  // Range: bytes=N- when >= 0
  // For downloads: each chunk of a 2xx body with the status (200 or 206); return false to abort.
  std::function<bool(const char* data, size_t size, int status)> on_body;
};

HttpResponse http_call(const HttpRequest& request);

// scheme://host[:port] of a URL ("" when it has none).
std::string url_origin(const std::string& url);
// `location` resolved against `base` (absolute, host-relative "/x", or relative).
std::string resolve_url(const std::string& base, const std::string& location);
// Percent-encodes a path segment (revision names may hold '/').
std::string url_escape(const std::string& s, bool keep_slash);

}  // namespace air::hub
