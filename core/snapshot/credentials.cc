// Which snapshot files look like credentials. They are flagged in the plan (not excluded): the user
// decides, with an .airignore line, whether they belong in the snapshot.
#include <algorithm>
#include <array>
#include <string_view>

#include "core/snapshot/snapshot.h"

namespace air {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

bool looks_like_credential(const std::string& rel_path, const std::string& content_head) {
  std::string_view path = rel_path;
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);

  // Templates people commit on purpose.
  for (std::string_view t : {".example", ".sample", ".template", ".dist"})
    if (ends_with(name, t)) return false;

  if (name == ".env" || starts_with(name, ".env.")) return true;
  for (std::string_view n : {".netrc", "_netrc", ".git-credentials", ".pgpass", ".htpasswd", "credentials.json",
                             "client_secret.json", "secrets.json", ".dockercfg"})
    if (name == n) return true;
  if (ends_with(path, ".aws/credentials") || ends_with(path, ".docker/config.json")) return true;
  for (std::string_view key : {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"})
    if (starts_with(name, key) && !ends_with(name, ".pub")) return true;
  for (std::string_view ext : {".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk"})
    if (ends_with(name, ext)) return true;

  if (name == ".npmrc")
    return content_head.find("_authToken") != std::string::npos || content_head.find("_auth") != std::string::npos ||
           content_head.find("_password") != std::string::npos;
  if (name == ".pypirc") return content_head.find("password") != std::string::npos;
  return false;
}

}  // namespace air
