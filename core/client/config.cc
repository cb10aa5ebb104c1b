// Resolves the workspace from flags, environment and the two profile files; reads and writes those files.
#include "core/client/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

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

constexpr const char* kSettings = "__settings__";  // the Databricks CLI's section of CLI-wide settings

struct Section {
  std::string name;
  std::map<std::string, std::string> keys;
};
using Ini = std::vector<Section>;

// go-ini's reading as the Databricks CLI uses it: [section] headers, key = value, # and ; comments;
// keys before any header belong to DEFAULT.
Ini read_ini(const std::string& path) {
  Ini out;
  std::ifstream in(path);
  std::string line;
  Section* cur = nullptr;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      out.push_back({trim(line.substr(1, line.size() - 2)), {}});
      cur = &out.back();
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    if (!cur) {
      out.push_back({"DEFAULT", {}});
      cur = &out.back();
    }
    cur->keys[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

const Section* find(const Ini& ini, const std::string& name) {
  for (const auto& s : ini)
    if (s.name == name) return &s;
  return nullptr;
}

std::string get(const Section& s, const char* key) {
  auto it = s.keys.find(key);
  return it == s.keys.end() ? "" : it->second;
}

std::string default_profile(const Ini& dbcfg) {
  const Section* s = find(dbcfg, kSettings);
  return s ? get(*s, "default_profile") : "";
}

WorkspaceTarget from_section(const Section& s, const std::string& file, const std::string& why) {
  std::string host = get(s, "host"), token = get(s, "token");
  if (host.empty())
    throw usage_error("profile '" + s.name + "' in " + file + " has no host", "add 'host = https://...' to it");
  if (token.empty())
    throw usage_error("profile '" + s.name + "' in " + file + " has no token",
                      "add 'token = <token>' to it, or run 'air auth login --host " + host + " -p " + s.name + "'");
  return {normalize_host(host), token, get(s, "ca_file"), why + " (" + file + ")"};
}

// A named profile: ~/.databrickscfg first (shared with the Databricks CLI), then $AIR_HOME/config.
WorkspaceTarget named_profile(const std::string& name, const std::string& why) {
  std::string dbpath = databricks_config_path(), airpath = config_file_path();
  Ini db = read_ini(dbpath), ours = read_ini(airpath);
  if (const Section* s = find(db, name); s && name != kSettings) return from_section(*s, dbpath, why);
  if (const Section* s = find(ours, name)) return from_section(*s, airpath, why);
  std::string known;
  for (const auto& p : list_profiles()) known += (known.empty() ? "" : ", ") + p.name;
  throw usage_error("unknown profile '" + name + "' (" + why + "): not in " + dbpath + " nor " + airpath,
                    known.empty() ? "create it: air auth login --host URL -p " + name : "known profiles: " + known);
}

std::optional<WorkspaceTarget> from_env(const char* host_var, const char* token_var) {
  std::string host = env(host_var);
  if (host.empty()) return std::nullopt;
  std::string token = env(token_var);
  if (token.empty())
    throw usage_error(std::string(host_var) + " is set but " + token_var + " is not",
                      std::string("export ") + token_var + "=<token>");
  return WorkspaceTarget{normalize_host(host), token, env("AIR_CA_FILE"), host_var};
}

}  // namespace

std::string normalize_host(std::string host) {
  host = trim(host);
  if (!host.empty() && host.find("://") == std::string::npos) host = "https://" + host;
  while (!host.empty() && host.back() == '/') host.pop_back();
  return host;
}

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

std::string databricks_config_path() {
  std::string f = env("DATABRICKS_CONFIG_FILE");
  if (!f.empty()) return f;
  return env("HOME") + "/.databrickscfg";
}

std::vector<ProfileInfo> list_profiles() {
  std::vector<ProfileInfo> out;
  std::string dbpath = databricks_config_path();
  Ini db = read_ini(dbpath);
  std::string def = default_profile(db);
  auto add = [&](const Ini& ini, const std::string& file) {
    for (const auto& s : ini) {
      if (s.name == kSettings || get(s, "host").empty()) continue;
      bool dup = false;
      for (const auto& p : out) dup = dup || p.name == s.name;
      if (dup) continue;  // the Databricks file wins (named_profile looks there first)
      out.push_back({s.name, normalize_host(get(s, "host")), file, !get(s, "token").empty(), s.name == def});
    }
  };
  add(db, dbpath);
  add(read_ini(config_file_path()), config_file_path());
  return out;
}

// Precedence, first match wins (docs/cli.md): -p NAME; AIR_HOST (+AIR_TOKEN); DATABRICKS_CONFIG_PROFILE;
// DATABRICKS_HOST (+DATABRICKS_TOKEN); [__settings__] default_profile of ~/.databrickscfg; [DEFAULT] of
// $AIR_HOME/config. The [DEFAULT] of ~/.databrickscfg is used only when named: it usually points at a
// Databricks workspace, which does not serve air's API, and must not replace the embedded default.
std::optional<WorkspaceTarget> configured_workspace(const std::string& profile) {
  if (!profile.empty()) return named_profile(profile, "-p " + profile);
  if (auto t = from_env("AIR_HOST", "AIR_TOKEN")) return t;
  if (std::string p = env("DATABRICKS_CONFIG_PROFILE"); !p.empty())
    return named_profile(p, "DATABRICKS_CONFIG_PROFILE=" + p);
  if (auto t = from_env("DATABRICKS_HOST", "DATABRICKS_TOKEN")) return t;
  if (std::string p = default_profile(read_ini(databricks_config_path())); !p.empty())
    return named_profile(p, "default_profile " + p);
  std::string airpath = config_file_path();
  Ini ours = read_ini(airpath);
  if (const Section* s = find(ours, "DEFAULT"); s && !get(*s, "host").empty())
    return from_section(*s, airpath, "profile DEFAULT");
  return std::nullopt;
}

namespace {

// Sets key = value inside [section] of the file's lines, adding the key or the section where missing.
void set_key(std::vector<std::string>& lines, const std::string& section, const std::string& key,
             const std::string& value) {
  size_t start = lines.size(), end = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string t = trim(lines[i]);
    if (t.size() < 2 || t.front() != '[' || t.back() != ']') continue;
    if (start != lines.size()) {
      end = i;
      break;
    }
    if (trim(t.substr(1, t.size() - 2)) == section) start = i;
  }
  if (start == lines.size()) {
    if (!lines.empty() && !trim(lines.back()).empty()) lines.push_back("");
    lines.push_back("[" + section + "]");
    lines.push_back(key + " = " + value);
    return;
  }
  for (size_t i = start + 1; i < end; ++i) {
    auto eq = lines[i].find('=');
    if (eq != std::string::npos && trim(lines[i].substr(0, eq)) == key && trim(lines[i])[0] != '#') {
      lines[i] = key + " = " + value;
      return;
    }
  }
  size_t at = end;
  while (at > start + 1 && trim(lines[at - 1]).empty()) --at;  // before the blank lines that end the section
  lines.insert(lines.begin() + static_cast<long>(at), key + " = " + value);
}

}  // namespace

void write_profile(const std::string& file, const std::string& name, const std::string& host,
                   const std::string& token, bool make_default) {
  if (name.empty() || name == kSettings || name.find_first_of("[]\n") != std::string::npos)
    throw usage_error("invalid profile name '" + name + "'", "use letters, digits, '-' and '_'");
  std::vector<std::string> lines;
  {
    std::ifstream in(file);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  set_key(lines, name, "host", normalize_host(host));
  set_key(lines, name, "token", token);
  if (make_default) set_key(lines, kSettings, "default_profile", name);
  std::string tmp = file + ".tmp." + std::to_string(::getpid());
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  // Created 0600 before a byte is written: the token is never readable by others, not even briefly.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("cannot write " + tmp);
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    throw Error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("cannot replace " + file);
  }
}

}  // namespace air
