// Serves the embedded web/ files (server/web/ui.h). The page is one index.html plus ES modules and CSS; the
// hash part of the URL (#/runs/<id>) picks the view, so every page address is served by "/".
#include "server/web/ui.h"

#include "server/http/server.h"

#include <string>

namespace air::server {

namespace {

std::string content_type(std::string_view name) {
  auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.substr(name.size() - s.size()) == s; };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  return "application/octet-stream";
}

void send_asset(const WebAsset& a, http::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
                 "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-cache");
  res.set_content(std::string(reinterpret_cast<const char*>(a.data), a.size), content_type(a.name));
}

}  // namespace

const WebAsset* find_web_asset(std::string_view name) {
  for (size_t i = 0; i < kWebAssetCount; ++i)
    if (name == kWebAssets[i].name) return &kWebAssets[i];
  return nullptr;
}

void install_web_ui(http::Server& srv) {
  srv.Get("/", [](const http::Request&, http::Response& res) {
    if (const WebAsset* a = find_web_asset("index.html")) send_asset(*a, res);
    else res.status = 404;
  });
  srv.Get(R"(/web/([A-Za-z0-9_.-]+))", [](const http::Request& req, http::Response& res) {
    const WebAsset* a = find_web_asset(req.matches[1].str());
    if (!a) {
      res.status = 404;
      res.set_content("not found\n", "text/plain");
      return;
    }
    send_asset(*a, res);
  });
}

}  // namespace air::server
