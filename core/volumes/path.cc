// Volume path rules (core/volumes/path.h).
#include "core/volumes/path.h"

#include "core/base/codec.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>

#include "core/base/codec.h"

namespace air {

namespace {

constexpr std::string_view kRoot = "/Volumes";

[[noreturn]] void bad_path(std::string_view path, const std::string& why) {
  throw FsError(400, "INVALID_PARAMETER_VALUE", fmt::format("invalid volume path '{}': {}", path, why));
}

// Unity Catalog: no period, space, slash, control characters or DEL in catalog, schema and volume names.
void check_uc_name(std::string_view path, const std::string& name, const char* what) {
  if (name.size() > 255) bad_path(path, fmt::format("the {} name is longer than 255 characters", what));
  for (unsigned char c : name)
    if (c == '.' || c == ' ' || c < 0x20 || c == 0x7f)
      bad_path(path, fmt::format("the {} name '{}' has a character Unity Catalog does not allow in names "
                                 "(period, space or control character)", what, name));
}

void check_segment(std::string_view path, const std::string& s) {
  if (s.empty()) bad_path(path, "it has an empty segment ('//')");
  if (s == "." || s == "..") bad_path(path, "'.' and '..' segments are not allowed");
  if (s.size() > 255) bad_path(path, "a segment is longer than 255 bytes");
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) bad_path(path, "it contains a control character");
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string VolumePath::str() const {
  std::string s(kRoot);
  for (const auto& p : parts) s += "/" + p;
  return s;
}

std::string VolumePath::volume_key() const {
  return in_volume() ? parts[0] + "/" + parts[1] + "/" + parts[2] : std::string();
}

std::string VolumePath::relative() const {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "/") + p;
  return s;
}

VolumePath VolumePath::child(const std::string& name) const {
  VolumePath c = *this;
  c.parts.push_back(name);
  return c;
}

std::string files_api_url(const VolumePath& p, const char* kind) {
  std::string u = std::string("/api/2.0/fs/") + kind + "/Volumes";
  for (const auto& s : p.parts) u += "/" + percent_encode(s);
  return u;
}

VolumePath volume_snapshot_path(const std::string& remote_volume, const std::string& sha256) {
  VolumePath v = parse_volume_path(remote_volume);
  if (!v.in_volume())
    throw FsError(400, "INVALID_PARAMETER_VALUE",
                  "remote_volume " + v.str() + " is not inside a volume: name /Volumes/<catalog>/<schema>/<volume>");
  return v.child(".internal").child(sha256 + ".tar.zst");
}

VolumePath parse_volume_path(std::string_view path) {
  std::string_view p = path;
  if (p.rfind("dbfs:", 0) == 0) p.remove_prefix(5);
  if (p.size() > 4096) bad_path(path.substr(0, 64), "it is longer than 4096 bytes");
  if (p.rfind(kRoot, 0) != 0 || (p.size() > kRoot.size() && p[kRoot.size()] != '/'))
    bad_path(path, "volume paths start with /Volumes/<catalog>/<schema>/<volume>");
  p.remove_prefix(kRoot.size());
  if (!p.empty() && p.back() == '/') p.remove_suffix(1);
  VolumePath out;
  while (!p.empty()) {
    p.remove_prefix(1);  // the '/'
    auto slash = p.find('/');
    std::string seg(p.substr(0, slash));
    check_segment(path, seg);
    static const char* kWhat[] = {"catalog", "schema", "volume"};
    if (out.parts.size() < 3) {
      check_uc_name(path, seg, kWhat[out.parts.size()]);
      seg = lower(seg);
    }
    out.parts.push_back(std::move(seg));
    if (slash == std::string_view::npos) break;
    p.remove_prefix(slash);
  }
  return out;
}

std::vector<std::string> volume_paths_in(std::string_view text) {
  static const std::regex re(R"(/Volumes/[^\s"'`$;|&<>(){}\[\],=]+)");
  std::vector<std::string> out;
  std::string s(text);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it) {
    std::string m = it->str();
    size_t end = static_cast<size_t>(it->position() + it->length());
    if (end < s.size() && (s[end] == '$' || s[end] == '`')) m = m.substr(0, m.rfind('/'));  // ".../n$RANK": its folder
    while (!m.empty() && (m.back() == '.' || m.back() == ':' || m.back() == '/')) m.pop_back();
    try {
      VolumePath vp = parse_volume_path(m);
      if (!vp.in_volume()) continue;
      std::string norm = vp.str();
      if (std::find(out.begin(), out.end(), norm) == out.end()) out.push_back(norm);
    } catch (const FsError&) {
    }
  }
  return out;
}

}  // namespace air
