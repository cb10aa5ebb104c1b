// The workspace REST client: JSON calls, streamed uploads and downloads, raw log reads.
// Every failure becomes an air::Error a user can act on: an unreachable workspace names its URL and the
// cause; an HTTP error carries the server's code, message and diagnostics (ApiError).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/diagnostics.h"
#include "core/base/error.h"
#include "core/client/transport.h"  // HttpResponse, ProgressFn, Transport

namespace air {

class ApiError : public Error {
 public:
  ApiError(long http_status, std::string code, std::string message, std::vector<Diagnostic> diagnostics,
           std::string hint = {}, int exit_code = kExitFailed)
      : Error(std::move(message), std::move(hint), exit_code),
        http_status_(http_status), code_(std::move(code)), diagnostics_(std::move(diagnostics)) {}
  long http_status() const { return http_status_; }
  const std::string& code() const { return code_; }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  long http_status_;
  std::string code_;
  std::vector<Diagnostic> diagnostics_;
};


// One connection kept alive between calls; not for use by two threads at once. http:// URLs are served by
// our own HTTP/1.1 client (core/client/http1.h), https:// by libcurl (loaded then, not at start-up);
// AIR_HTTP_CLIENT=curl sends http:// through libcurl too.
class Client {
 public:
  // base_url like http://127.0.0.1:8470; token may be empty (health only).
  Client(std::string base_url, std::string token, std::string ca_file = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& base_url() const { return base_url_; }

  // path is relative to the host ("/api/air/v1/runs"). Non-2xx statuses throw ApiError.
  nlohmann::json get_json(const std::string& path, long timeout_ms = 30000);
  nlohmann::json post_json(const std::string& path, const nlohmann::json& body, long timeout_ms = 30000);
  // true when 200, false when 404; anything else throws.
  bool head(const std::string& path, long timeout_ms = 30000);
  // Streams a file as the body of a PUT.
  nlohmann::json put_file(const std::string& path, const std::string& file, const ProgressFn& progress = {});
  // Streams a GET's body into a file (written to file + ".part", renamed when complete); progress may be
  // empty; timeout 0: none.
  void get_to_file(const std::string& path, const std::string& file, const ProgressFn& progress = {},
                   long timeout_ms = 0);
  // Any request; does not throw on HTTP error statuses (only on transport failures).
  HttpResponse request(const std::string& method, const std::string& path, const std::string& body = {},
                       const std::string& content_type = {}, long timeout_ms = 30000);
  // The same, but a transport failure is returned too (status 0, transport_error): for callers that retry,
  // such as the node agent's log shipper and heartbeats.
  HttpResponse send(const std::string& method, const std::string& path, const std::string& body = {},
                    const std::string& content_type = {}, long timeout_ms = 30000);
  // Throws ApiError built from an error response.
  [[noreturn]] void throw_api_error(const HttpResponse& r) const;

 private:
  [[noreturn]] void throw_transport(const std::string& cause) const;

  std::string base_url_, token_, ca_file_;
  std::unique_ptr<Transport> transport_;
};

// For log lines: "connection refused", or "HTTP 500: <the error body's message>".
std::string describe(const HttpResponse& r);

}  // namespace air
