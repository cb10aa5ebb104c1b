// The workspace client over a Transport (core/client/transport.h): our HTTP/1.1 client for http:// URLs,
// libcurl for https://. What is common — errors a user can act on, JSON, files — lives here.
#include "core/client/client.h"

#include "core/client/config.h"
#include "core/client/transport.h"
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace air {

Client::Client(std::string base_url, std::string token, std::string ca_file)
    : base_url_(std::move(base_url)), token_(std::move(token)), ca_file_(std::move(ca_file)) {
  base_url_ = normalize_host(base_url_);  // the one URL rule: a bare host means https
  transport_ = make_plain_transport(base_url_);
  if (!transport_) transport_ = make_curl_transport(base_url_, ca_file_);
}

Client::~Client() = default;

void Client::throw_transport(const std::string& cause) const {
  throw Error(fmt::format("cannot reach workspace at {}: {}", base_url_, cause),
              "check that the workspace is running ('air server status') and that AIR_HOST or the profile "
              "names it");
}

HttpResponse Client::request(const std::string& method, const std::string& path, const std::string& body,
                             const std::string& content_type, long timeout_ms) {
  HttpResponse r = send(method, path, body, content_type, timeout_ms);
  if (r.status == 0) throw_transport(r.transport_error);
  return r;
}

HttpResponse Client::send(const std::string& method, const std::string& path, const std::string& body,
                          const std::string& content_type, long timeout_ms) {
  Transfer t;
  t.method = method;
  t.path = path;
  t.body = body;
  t.content_type = content_type;
  t.timeout_ms = timeout_ms;
  return transport_->perform(t, token_);
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
  Transfer t;
  t.method = "PUT";
  t.path = path;
  t.content_type = "application/octet-stream";
  t.upload = f;
  t.upload_size = std::filesystem::file_size(file);
  t.timeout_ms = 0;
  t.progress = &progress;
  HttpResponse r = transport_->perform(t, token_);
  std::fclose(f);
  if (r.status == 0) throw_transport(r.transport_error);
  if (r.status / 100 != 2) throw_api_error(r);
  return r.body.empty() ? nlohmann::json::object() : nlohmann::json::parse(r.body);
}

void Client::get_to_file(const std::string& path, const std::string& file, const ProgressFn& progress,
                         long timeout_ms) {
  std::string part = file + ".part";
  FILE* f = std::fopen(part.c_str(), "wb");
  if (!f) throw Error("cannot write " + part);
  Transfer t;
  t.method = "GET";
  t.path = path;
  t.download = f;
  t.timeout_ms = timeout_ms;
  t.progress = &progress;
  HttpResponse r = transport_->perform(t, token_);
  bool ok = std::fclose(f) == 0 && r.status == 200;
  if (!ok) {
    if (r.status != 0) {  // the error's body went to the file
      std::ifstream in(part);
      r.body.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::filesystem::remove(part);
    if (r.status == 0) throw_transport(r.transport_error);
    if (r.status == 200) throw Error("cannot write " + part);
    throw_api_error(r);
  }
  std::filesystem::rename(part, file);
}

}  // namespace air
