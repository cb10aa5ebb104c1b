// libcurl easy handles, one per call: simple and safe across the download threads; connection reuse
// matters little next to multi-gigabyte bodies.
#include "hub/http.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

#include <curl/curl.h>

namespace air::hub {
namespace {

std::once_flag g_curl_init;

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<HttpResponse*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (e.g. after 100 Continue). Its status class is kept as a pseudo-header so on_body knows,
    // before libcurl reports the code, whether the body is the file or an error page.
    r->headers.clear();
    size_t sp = line.find(' ');
    if (sp != std::string::npos && sp + 1 < line.size()) r->headers[":status"] = line.substr(sp + 1, 3);
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
    size_t i = value.find_first_not_of(' ');
    r->headers[name] = i == std::string::npos ? "" : value.substr(i);
  }
  return size * n;
}

struct BodySink {
  HttpResponse* response;
  const HttpRequest* request;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<BodySink*>(user);
  const size_t len = size * n;
  // Error bodies (JSON messages) are kept in memory; only a 2xx body goes to the caller's sink.
  const std::string status = s->response->header(":status");
  if (s->request->on_body && !status.empty() && status[0] == '2')
    return s->request->on_body(data, len, std::atoi(status.c_str())) ? len : 0;
  if (s->response->body.size() < (1 << 20)) s->response->body.append(data, len);
  return len;
}

}  // namespace

std::string HttpResponse::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

HttpResponse http_call(const HttpRequest& req) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpResponse r;
  CURL* c = curl_easy_init();
  if (!c) {
    r.error = "libcurl failed to initialise";
    return r;
  }
  struct curl_slist* hdrs = nullptr;
  std::string auth = "Authorization: Bearer " + req.token;
  if (!req.token.empty()) hdrs = curl_slist_append(hdrs, auth.c_str());
  hdrs = curl_slist_append(hdrs, "User-Agent: air-hub/0.1");
  std::string range = "Range: bytes=" + std::to_string(req.range_from) + "-";
  if (req.range_from >= 0) hdrs = curl_slist_append(hdrs, range.c_str());
  BodySink sink{&r, &req};
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_NOBODY, req.method == "HEAD" ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "identity");  // sizes and hashes are of the raw bytes
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 15L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled transfer fails after a minute and is retried
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024L);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  if (rc != CURLE_OK) r.error = curl_easy_strerror(rc);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(c);
  return r;
}

std::string url_origin(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  size_t end = url.find_first_of("/?#", scheme + 3);
  std::string o = url.substr(0, end);
  std::transform(o.begin(), o.end(), o.begin(), [](unsigned char c) { return std::tolower(c); });
  return o;
}

std::string resolve_url(const std::string& base, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  if (!location.empty() && location[0] == '/') return url_origin(base) + location;
  std::string dir = base.substr(0, base.find_first_of("?#"));
  return dir.substr(0, dir.rfind('/') + 1) + location;
}

std::string url_escape(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace air::hub
