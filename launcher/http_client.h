// A small blocking HTTP client for the node agent (libcurl). One instance per thread: it keeps its
// connection alive between requests. Transport failures are returned, not thrown, so callers can retry.
#pragma once
#include <string>

namespace air::launcher {

struct HttpResponse {
  long status = 0;        // 0 when the request never got a response
  std::string body;
  std::string transport_error;  // curl's message when status == 0
  bool ok() const { return status >= 200 && status < 300; }
};

class HttpClient {
 public:
  // base_url like "http://127.0.0.1:8470" (a trailing '/' is ignored). The token is sent as a bearer
  // token and never appears in errors.
  HttpClient(std::string base_url, std::string token);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpResponse get(const std::string& path, long timeout_ms = 30000);
  HttpResponse post(const std::string& path, const std::string& body, const std::string& content_type,
                    long timeout_ms = 30000);
  // Streams the body of a GET into file_path (created or truncated) when the status is 2xx.
  HttpResponse download(const std::string& path, const std::string& file_path, long timeout_ms);

  const std::string& base_url() const { return base_url_; }

 private:
  HttpResponse perform(const std::string& path, const std::string* post_body, const std::string& content_type,
                       long timeout_ms, void* file);
  std::string base_url_;
  std::string auth_header_;
  void* curl_ = nullptr;
};

// "connection refused" / "HTTP 500: <message>" for diagnostics.
std::string describe(const HttpResponse& r);

}  // namespace air::launcher
