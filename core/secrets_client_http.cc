// libcurl implementation of RestCaller; one easy handle per caller keeps the connection alive.
#include "core/secrets_client_http.h"

#include <curl/curl.h>

#include <mutex>

#include "core/error.h"

namespace air {

namespace {

size_t append_body(char* p, size_t size, size_t n, void* ud) {
  static_cast<std::string*>(ud)->append(p, size * n);
  return size * n;
}

}  // namespace

RestCaller::RestCaller(std::string host, std::string token, long timeout_ms)
    : base_url_(std::move(host)), token_(std::move(token)), timeout_ms_(timeout_ms) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  if (base_url_.find("://") == std::string::npos) base_url_ = "https://" + base_url_;
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
  if (!curl_) throw Error("cannot initialise libcurl");
}

RestCaller::~RestCaller() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

RestResult RestCaller::call(const std::string& method, const std::string& path, const std::string& body) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  std::string url = base_url_ + path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms_);
  curl_slist* headers = nullptr;
  std::string auth = "Authorization: Bearer " + token_;
  if (!token_.empty()) headers = curl_slist_append(headers, auth.c_str());
  headers = curl_slist_append(headers, "Accept: application/json");
  headers = curl_slist_append(headers, "Expect:");
  if (method == "POST") {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else if (method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  RestResult r;
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  // The token lived in a stack string handed to libcurl; wipe our copy of the header line.
  std::fill(auth.begin(), auth.end(), '\0');
  if (rc != CURLE_OK) {
    std::string cause = rc == CURLE_COULDNT_CONNECT ? "connection refused"
                        : rc == CURLE_OPERATION_TIMEDOUT ? "timed out"
                        : rc == CURLE_COULDNT_RESOLVE_HOST ? "unknown host"
                                                           : curl_easy_strerror(rc);
    throw Error("cannot reach workspace at " + base_url_ + ": " + cause,
                "check the workspace URL and that it is running");
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

}  // namespace air
