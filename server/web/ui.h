// The run page's static files (web/, embedded into the binary at build time by cmake/embed_web.cmake),
// served at / and /web/<file> with a strict Content-Security-Policy: the page loads nothing from elsewhere.
#pragma once
#include <cstddef>
#include <string_view>

namespace air::server::http {
class Server;
}

namespace air::server {

struct WebAsset {
  const char* name;  // path under web/, e.g. "app.js"
  const unsigned char* data;
  size_t size;
};
// Generated in the build (web_assets.cc).
extern const WebAsset kWebAssets[];
extern const size_t kWebAssetCount;

const WebAsset* find_web_asset(std::string_view name);
void install_web_ui(http::Server& srv);

}  // namespace air::server
