// Reads AIR_HOST/AIR_TOKEN and $AIR_HOME/config profiles.
#include "core/client/config.h"

#include <cstdlib>
#include <fstream>
#include <map>

#include "core/base/error.h"

namespace air {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

using Sections = std::map<std::string, std::map<std::string, std::string>>;

Sections read_ini(const std::string& path) {
  Sections out;
  std::ifstream in(path);
  std::string line, section = "DEFAULT";
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
      out[section];
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    out[section][trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

std::string normalise_url(std::string host) {
  if (host.find("://") == std::string::npos) host = "http://" + host;
  while (!host.empty() && host.back() == '/') host.pop_back();
  return host;
}

}  // namespace

std::string air_home() {
  std::string h = env("AIR_HOME");
  if (!h.empty()) return h;
  std::string home = env("HOME");
  if (home.empty()) throw Error("neither AIR_HOME nor HOME is set", "set AIR_HOME to a folder air may use");
  return home + "/.air";
}

std::string config_file_path() {
  std::string f = env("AIR_CONFIG_FILE");
  return f.empty() ? air_home() + "/config" : f;
}

std::optional<WorkspaceTarget> configured_workspace(const std::string& profile) {
  if (profile.empty()) {
    std::string host = env("AIR_HOST");
    if (!host.empty()) {
      std::string token = env("AIR_TOKEN");
      if (token.empty()) throw Error("AIR_HOST is set but AIR_TOKEN is not", "export AIR_TOKEN=<token>");
      return WorkspaceTarget{normalise_url(host), token, env("AIR_CA_FILE"), "AIR_HOST"};
    }
  }
  std::string path = config_file_path();
  Sections ini = read_ini(path);
  std::string name = profile.empty() ? "DEFAULT" : profile;
  auto it = ini.find(name);
  if (it == ini.end() || it->second.find("host") == it->second.end()) {
    if (profile.empty()) return std::nullopt;
    std::string known;
    for (const auto& [k, v] : ini)
      if (v.count("host")) known += (known.empty() ? "" : ", ") + k;
    throw usage_error("unknown profile '" + profile + "' in " + path,
                      known.empty() ? "add a [" + profile + "] section with host and token"
                                    : "known profiles: " + known);
  }
  const auto& s = it->second;
  auto tok = s.find("token");
  if (tok == s.end() || tok->second.empty())
    throw Error("profile '" + name + "' in " + path + " has no token", "add 'token = <token>' to it");
  auto ca = s.find("ca_file");
  return WorkspaceTarget{normalise_url(s.at("host")), tok->second, ca == s.end() ? "" : ca->second,
                         "profile " + name};
}

}  // namespace air
