// libcurl implementation of the workspace client. One easy handle per Client keeps the connection alive
// between calls (log following makes many small requests).
#include "core/client/client.h"

#include "core/client/config.h"
#include "core/client/curl_api.h"
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>

namespace air {

namespace {

void global_init() { curl(); }  // loads libcurl and initialises it, once

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

}  // namespace

Client::Client(std::string base_url, std::string token, std::string ca_file)
    : base_url_(std::move(base_url)), token_(std::move(token)), ca_file_(std::move(ca_file)) {
  base_url_ = normalize_host(base_url_);  // the one URL rule: a bare host means https
  global_init();
  curl_ = curl().easy_init();
  if (!curl_) throw Error("cannot initialise libcurl");
}

Client::~Client() { curl().easy_cleanup(static_cast<CURL*>(curl_)); }

void* Client::curl_for(const std::string& method, const std::string& path, long timeout_ms) {
  CURL* c = static_cast<CURL*>(curl_);
  curl().easy_reset(c);
  std::string url = base_url_ + path;
  curl().easy_setopt(c, CURLOPT_URL, url.c_str());
  curl().easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl().easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl().easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl().easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  if (!ca_file_.empty()) curl().easy_setopt(c, CURLOPT_CAINFO, ca_file_.c_str());
  if (method == "HEAD") {
    curl().easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (method != "GET") {
    curl().easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  return c;
}

namespace {

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

}  // namespace

void Client::throw_transport(int code, const char* errbuf) const {
  throw Error(fmt::format("cannot reach workspace at {}: {}", base_url_, transport_cause(code, errbuf)),
              "check that the workspace is running ('air server status') and that AIR_HOST or the profile "
              "names it");
}

HttpResponse Client::request(const std::string& method, const std::string& path, const std::string& body,
                             const std::string& content_type, long timeout_ms) {
  HttpResponse r = send(method, path, body, content_type, timeout_ms);
  if (r.status == 0) throw_transport(r.transport_code, r.transport_error.c_str());
  return r;
}

HttpResponse Client::send(const std::string& method, const std::string& path, const std::string& body,
                          const std::string& content_type, long timeout_ms) {
  CURL* c = static_cast<CURL*>(curl_for(method, path, timeout_ms));
  HttpResponse r;
  curl_slist* hdrs = nullptr;
  std::string auth = "Authorization: Bearer " + token_;
  if (!token_.empty()) hdrs = curl().slist_append(hdrs, auth.c_str());
  std::fill(auth.begin(), auth.end(), '\0');  // libcurl copied it; leave no second copy of the token around
  if (!content_type.empty()) hdrs = curl().slist_append(hdrs, ("Content-Type: " + content_type).c_str());
  hdrs = curl().slist_append(hdrs, "Expect:");  // a 1 MiB log chunk must not wait for "100 Continue"
  curl().easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  if (method == "POST" || method == "PUT" || method == "PATCH" || (method == "DELETE" && !body.empty())) {
    curl().easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl().easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl().easy_setopt(c, CURLOPT_WRITEFUNCTION, write_string);
  curl().easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl().easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl().easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl().easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  CURLcode rc = curl().easy_perform(c);
  curl().slist_free_all(hdrs);
  if (rc != CURLE_OK) {
    r.body.clear();
    r.headers.clear();
    r.transport_code = rc;
    r.transport_error = transport_cause(rc, errbuf);
    return r;
  }
  curl().easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

std::string describe(const HttpResponse& r) {
  if (r.status == 0) return r.transport_error.empty() ? "no response" : r.transport_error;
  std::string msg = "HTTP " + std::to_string(r.status);
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object()) {
    auto e = j.find("error");
    if (e != j.end() && e->is_object()) {
      auto m = e->find("message");
      if (m != e->end() && m->is_string()) msg += ": " + m->get<std::string>();
    }
  }
  return msg;
}

void Client::throw_api_error(const HttpResponse& r) const {
  std::string code = "HTTP_" + std::to_string(r.status), message;
  std::vector<Diagnostic> diags;
  try {
    auto j = nlohmann::json::parse(r.body);
    if (auto it = j.find("error"); it != j.end() && it->is_object()) {
      code = it->value("code", code);
      message = it->value("message", "");
      if (auto d = it->find("diagnostics"); d != it->end() && d->is_array())
        for (const auto& x : *d) diags.push_back(diagnostic_from_json(x));
    } else if (j.contains("error_code")) {  // Databricks' shape (secrets, Files API)
      code = j.value("error_code", code);
      message = j.value("message", "");
    }
  } catch (const std::exception&) {
  }
  if (message.empty()) message = fmt::format("workspace at {} answered HTTP {}", base_url_, r.status);
  std::string hint;
  int exit_code = kExitFailed;
  // Only a 401 is about the token; any other refusal (403 included) is shown as the server's own message,
  // which says what is missing and who can grant it.
  if (r.status == 401)
    hint = "check AIR_TOKEN or the profile's token; for the local workspace, 'air server status'";
  if (r.status == 400) exit_code = kExitUsage;
  throw ApiError(r.status, code, message, std::move(diags), hint, exit_code);
}

nlohmann::json Client::get_json(const std::string& path, long timeout_ms) {
  auto r = request("GET", path, {}, {}, timeout_ms);
  if (r.status / 100 != 2) throw_api_error(r);
  return r.body.empty() ? nlohmann::json::object() : nlohmann::json::parse(r.body);
}

nlohmann::json Client::post_json(const std::string& path, const nlohmann::json& body, long timeout_ms) {
  auto r = request("POST", path, body.dump(), "application/json", timeout_ms);
  if (r.status / 100 != 2) throw_api_error(r);
  return r.body.empty() ? nlohmann::json::object() : nlohmann::json::parse(r.body);
}

bool Client::head(const std::string& path, long timeout_ms) {
  auto r = request("HEAD", path, {}, {}, timeout_ms);
  if (r.status == 200) return true;
  if (r.status == 404) return false;
  throw_api_error(r);
}

nlohmann::json Client::put_file(const std::string& path, const std::string& file, const ProgressFn& progress) {
  FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) throw Error("cannot read " + file);
  uint64_t total = std::filesystem::file_size(file);
  CURL* c = static_cast<CURL*>(curl_for("PUT", path, 0));
  curl().easy_setopt(c, CURLOPT_UPLOAD, 1L);
  curl().easy_setopt(c, CURLOPT_READFUNCTION, read_file);
  curl().easy_setopt(c, CURLOPT_READDATA, f);
  curl().easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(total));
  Progress prog{&progress, total};
  curl().easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl().easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl().easy_setopt(c, CURLOPT_XFERINFODATA, &prog);
  curl_slist* hdrs = nullptr;
  if (!token_.empty()) hdrs = curl().slist_append(hdrs, ("Authorization: Bearer " + token_).c_str());
  hdrs = curl().slist_append(hdrs, "Content-Type: application/octet-stream");
  hdrs = curl().slist_append(hdrs, "Expect:");
  curl().easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  HttpResponse r;
  curl().easy_setopt(c, CURLOPT_WRITEFUNCTION, write_string);
  curl().easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl().easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  CURLcode rc = curl().easy_perform(c);
  curl().slist_free_all(hdrs);
  std::fclose(f);
  if (rc != CURLE_OK) throw_transport(rc, errbuf);
  curl().easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  if (r.status / 100 != 2) throw_api_error(r);
  return r.body.empty() ? nlohmann::json::object() : nlohmann::json::parse(r.body);
}

void Client::get_to_file(const std::string& path, const std::string& file, const ProgressFn& progress,
                         long timeout_ms) {
  std::string part = file + ".part";
  FILE* f = std::fopen(part.c_str(), "wb");
  if (!f) throw Error("cannot write " + part);
  CURL* c = static_cast<CURL*>(curl_for("GET", path, timeout_ms));
  curl_slist* hdrs = nullptr;
  if (!token_.empty()) hdrs = curl().slist_append(hdrs, ("Authorization: Bearer " + token_).c_str());
  curl().easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl().easy_setopt(c, CURLOPT_WRITEFUNCTION, write_file);
  curl().easy_setopt(c, CURLOPT_WRITEDATA, f);
  Progress prog{&progress, 0, true};
  if (progress) {
    curl().easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl().easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl().easy_setopt(c, CURLOPT_XFERINFODATA, &prog);
  }
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl().easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  CURLcode rc = curl().easy_perform(c);
  curl().slist_free_all(hdrs);
  long status = 0;
  curl().easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  bool ok = std::fclose(f) == 0 && rc == CURLE_OK && status == 200;
  if (!ok) {
    HttpResponse r;
    r.status = status;
    if (rc == CURLE_OK) {
      std::ifstream in(part);
      r.body.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::filesystem::remove(part);
    if (rc != CURLE_OK) throw_transport(rc, errbuf);
    throw_api_error(r);
  }
  std::filesystem::rename(part, file);
}

}  // namespace air
