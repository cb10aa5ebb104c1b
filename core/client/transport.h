// How one request moves: libcurl for https:// (and wherever a proxy or AIR_HTTP_CLIENT=curl asks for it), our
// own HTTP/1.1 client (core/client/http1.cc) for plain http://. Both keep one connection alive between the
// requests of one Client (core/client/client.h). This header and http1.* need only the standard library and
// the system's sockets: the trainer's MLflow logger links them as `air_http1` (the root CMakeLists.txt).
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace air {

struct HttpResponse {
  long status = 0;             // 0: no response (send() only; transport_error says why)
  std::string body;
  std::string transport_error;  // "connection refused", "timed out", ... when status is 0
  int transport_code = 0;       // when status is 0: libcurl's code, or -1 from our own HTTP/1.1 client
  bool ok() const { return status >= 200 && status < 300; }
  std::map<std::string, std::string> headers;  // lower-case names
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Called during uploads and downloads with (bytes moved, total bytes; 0 while unknown).
using ProgressFn = std::function<void(uint64_t, uint64_t)>;

// One request. The body is `body`, or the `upload` file's `upload_size` bytes (read from its current
// position); the response's body goes to `download` when set (whatever the status), else HttpResponse::body.
struct Transfer {
  std::string method, path;  // path: relative to the base URL's host, with its query string
  std::string_view body;
  std::string content_type;
  FILE* upload = nullptr;
  uint64_t upload_size = 0;
  FILE* download = nullptr;
  long timeout_ms = 30000;  // the whole exchange; 0: none
  const ProgressFn* progress = nullptr;  // (bytes moved, total; 0 while unknown) of the upload or download
};

class Transport {
 public:
  virtual ~Transport() = default;
  // A failure to connect, send or receive is returned as status 0 with transport_error ("connection
  // refused", "timed out", ...); never throws for it.
  virtual HttpResponse perform(const Transfer& t, const std::string& token) = 0;
};

// libcurl (loaded on first use: core/client/curl_api.h); base_url is a whole URL, ca_file may be empty.
std::unique_ptr<Transport> make_curl_transport(const std::string& base_url, const std::string& ca_file);
// Ours, for an http:// base URL; nullptr when the URL is not one it serves (https, a proxy in the
// environment for a non-loopback host, AIR_HTTP_CLIENT=curl).
std::unique_ptr<Transport> make_plain_transport(const std::string& base_url);

}  // namespace air
