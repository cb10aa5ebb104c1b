// A small libcurl JSON caller shared by the secrets and MLflow clients: one base URL, a bearer token, and
// requests that return status + body. Transport failures throw air::Error naming the URL (never a body).
#pragma once
#include <string>

namespace air {

struct RestResult {
  long status = 0;
  std::string body;
};

class RestCaller {
 public:
  // host: "https://x.cloud.databricks.com", "http://127.0.0.1:8470" or a bare host name (https assumed).
  RestCaller(std::string host, std::string token, long timeout_ms = 30000);
  ~RestCaller();
  RestCaller(const RestCaller&) = delete;
  RestCaller& operator=(const RestCaller&) = delete;

  // path: "/api/2.0/secrets/list?scope=x". body is sent as application/json when method is POST.
  RestResult call(const std::string& method, const std::string& path, const std::string& body = {});
  const std::string& base_url() const { return base_url_; }

 private:
  std::string base_url_, token_;
  long timeout_ms_;
  void* curl_ = nullptr;
};

}  // namespace air
