// The libcurl transport (core/client/transport.h): https:// workspaces, proxies, AIR_HTTP_CLIENT=curl. One
// easy handle per Client keeps the connection alive between calls.
#include <algorithm>
#include <cctype>
#include <map>

#include "core/base/error.h"
#include "core/client/curl_api.h"
#include "core/client/transport.h"

namespace air {

namespace {

size_t write_string(char* p, size_t sz, size_t n, void* ud) {
  static_cast<std::string*>(ud)->append(p, sz * n);
  return sz * n;
}

size_t write_file(char* p, size_t sz, size_t n, void* ud) {
  return std::fwrite(p, sz, n, static_cast<FILE*>(ud)) * sz;
}

size_t read_file(char* p, size_t sz, size_t n, void* ud) { return std::fread(p, sz, n, static_cast<FILE*>(ud)); }

size_t on_header(char* p, size_t sz, size_t n, void* ud) {
  std::string line(p, sz * n);
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    auto b = value.find_first_not_of(" \t");
    auto e = value.find_last_not_of(" \t\r\n");
    value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
    (*static_cast<std::map<std::string, std::string>*>(ud))[name] = value;
  }
  return sz * n;
}

struct Progress {
  const ProgressFn* fn;
  uint64_t total;
  bool download = false;
};

int on_progress(void* ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t ulnow) {
  auto* p = static_cast<Progress*>(ud);
  if (!p->fn || !*p->fn) return 0;
  if (p->download) (*p->fn)(static_cast<uint64_t>(dlnow), static_cast<uint64_t>(dltotal));
  else (*p->fn)(static_cast<uint64_t>(ulnow), p->total);
  return 0;
}

std::string transport_cause(int code, const char* errbuf) {
  std::string why = errbuf && *errbuf ? errbuf : curl().easy_strerror(static_cast<CURLcode>(code));
  switch (code) {
    case CURLE_COULDNT_CONNECT: return "connection refused";
    case CURLE_COULDNT_RESOLVE_HOST: return "unknown host";
    case CURLE_OPERATION_TIMEDOUT: return "timed out";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION: return "TLS failure (" + why + ")";
    default: return why;
  }
}

class CurlTransport : public Transport {
 public:
  CurlTransport(std::string base_url, std::string ca_file) : base_url_(std::move(base_url)), ca_file_(std::move(ca_file)) {
    curl_ = curl().easy_init();  // loads libcurl and initialises it, once
    if (!curl_) throw Error("cannot initialise libcurl");
  }
  ~CurlTransport() override { curl().easy_cleanup(curl_); }

  HttpResponse perform(const Transfer& t, const std::string& token) override {
    const CurlApi& api = curl();
    CURL* c = curl_;
    api.easy_reset(c);
    std::string url = base_url_ + t.path;
    api.easy_setopt(c, CURLOPT_URL, url.c_str());
    api.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    api.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    api.easy_setopt(c, CURLOPT_TIMEOUT_MS, t.timeout_ms);
    api.easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    if (!ca_file_.empty()) api.easy_setopt(c, CURLOPT_CAINFO, ca_file_.c_str());
    if (t.method == "HEAD") api.easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (t.method != "GET") api.easy_setopt(c, CURLOPT_CUSTOMREQUEST, t.method.c_str());
    Progress prog{t.progress, t.upload_size, t.download != nullptr};
    if (t.upload) {
      api.easy_setopt(c, CURLOPT_UPLOAD, 1L);
      api.easy_setopt(c, CURLOPT_READFUNCTION, read_file);
      api.easy_setopt(c, CURLOPT_READDATA, t.upload);
      api.easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(t.upload_size));
    } else if (t.method == "POST" || t.method == "PUT" || t.method == "PATCH" ||
               (t.method == "DELETE" && !t.body.empty())) {
      api.easy_setopt(c, CURLOPT_POSTFIELDS, t.body.data());
      api.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.body.size()));
    }
    if (t.progress && *t.progress && (t.upload || t.download)) {
      api.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
      api.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
      api.easy_setopt(c, CURLOPT_XFERINFODATA, &prog);
    }
    curl_slist* hdrs = nullptr;
    std::string auth = "Authorization: Bearer " + token;
    if (!token.empty()) hdrs = api.slist_append(hdrs, auth.c_str());
    std::fill(auth.begin(), auth.end(), '\0');  // libcurl copied it; leave no second copy of the token around
    if (!t.content_type.empty()) hdrs = api.slist_append(hdrs, ("Content-Type: " + t.content_type).c_str());
    hdrs = api.slist_append(hdrs, "Expect:");  // a 1 MiB log chunk must not wait for "100 Continue"
    api.easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    HttpResponse r;
    if (t.download) {
      api.easy_setopt(c, CURLOPT_WRITEFUNCTION, write_file);
      api.easy_setopt(c, CURLOPT_WRITEDATA, t.download);
    } else {
      api.easy_setopt(c, CURLOPT_WRITEFUNCTION, write_string);
      api.easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    }
    api.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    api.easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
    char errbuf[CURL_ERROR_SIZE] = {0};
    api.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = api.easy_perform(c);
    api.slist_free_all(hdrs);
    if (rc != CURLE_OK) {
      r.body.clear();
      r.headers.clear();
      r.transport_code = rc;
      r.transport_error = transport_cause(rc, errbuf);
      return r;
    }
    api.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    return r;
  }

 private:
  std::string base_url_, ca_file_;
  CURL* curl_ = nullptr;
};

}  // namespace

std::unique_ptr<Transport> make_curl_transport(const std::string& base_url, const std::string& ca_file) {
  return std::make_unique<CurlTransport>(base_url, ca_file);
}

}  // namespace air
