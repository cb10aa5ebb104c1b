// libcurl behind HttpClient: keep-alive, short connect timeout, bearer token, optional streaming to a file.
#include "launcher/http_client.h"

#include <curl/curl.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <mutex>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace air::launcher {

namespace {

size_t append_to_string(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// A download writes a 2xx body to the file and keeps any other body (an error) in memory.
struct DownloadSink {
  FILE* file;
  std::string* error_body;
  bool to_file;
};

size_t sink_header(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<DownloadSink*>(user);
  std::string_view line(data, size * n);
  if (line.substr(0, 5) == "HTTP/") {
    auto sp = line.find(' ');
    int code = sp == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
    sink->to_file = code >= 200 && code < 300;
  }
  return size * n;
}

size_t sink_write(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<DownloadSink*>(user);
  if (sink->to_file) return std::fwrite(data, 1, size * n, sink->file);
  sink->error_body->append(data, size * n);
  return size * n;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

HttpClient::HttpClient(std::string base_url, std::string token) : base_url_(std::move(base_url)) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  if (!token.empty()) auth_header_ = "Authorization: Bearer " + token;
  global_init();
  curl_ = curl_easy_init();
  if (!curl_) throw Error("cannot initialise libcurl");
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResponse HttpClient::get(const std::string& path, long timeout_ms) {
  return perform(path, nullptr, "", timeout_ms, nullptr);
}

HttpResponse HttpClient::post(const std::string& path, const std::string& body, const std::string& content_type,
                              long timeout_ms) {
  return perform(path, &body, content_type, timeout_ms, nullptr);
}

HttpResponse HttpClient::download(const std::string& path, const std::string& file_path, long timeout_ms) {
  FILE* f = std::fopen(file_path.c_str(), "wb");
  if (!f) throw Error("cannot write " + file_path);
  HttpResponse r = perform(path, nullptr, "", timeout_ms, f);
  if (std::fclose(f) != 0 && r.ok()) {
    r.status = 0;
    r.transport_error = "cannot write " + file_path;
  }
  return r;
}

HttpResponse HttpClient::perform(const std::string& path, const std::string* post_body,
                                 const std::string& content_type, long timeout_ms, void* file) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  HttpResponse r;
  std::string url = base_url_ + path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  struct curl_slist* headers = nullptr;
  if (!auth_header_.empty()) headers = curl_slist_append(headers, auth_header_.c_str());
  // A 1 MiB log chunk must not wait for "100 Continue".
  headers = curl_slist_append(headers, "Expect:");
  std::string ct_header;
  if (post_body) {
    ct_header = "Content-Type: " + (content_type.empty() ? std::string("application/json") : content_type);
    headers = curl_slist_append(headers, ct_header.c_str());
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  DownloadSink sink{static_cast<FILE*>(file), &r.body, false};
  if (file) {
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, sink_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &sink);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  } else {
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_to_string);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  }
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    r.status = 0;
    r.transport_error = curl_easy_strerror(rc);
    return r;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

std::string describe(const HttpResponse& r) {
  if (r.status == 0) return r.transport_error.empty() ? "no response" : r.transport_error;
  std::string msg = "HTTP " + std::to_string(r.status);
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message") &&
      j["error"]["message"].is_string()) {
    msg += ": " + j["error"]["message"].get<std::string>();
  }
  return msg;
}

}  // namespace air::launcher
