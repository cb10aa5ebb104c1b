// Parsing $AIR_HOME/server.conf:
//
//   backend = slurm
//   advertise_url = http://10.0.0.5:8470
//   [slurm]
//   partition = gpu
//   account = ml-team
//   option = --qos=high        # repeatable
#include "server/workspace/config.h"

#include <fmt/format.h>

#include <fstream>

#include "core/base/error.h"

namespace air::server {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

ServerConfig read_server_config(const std::string& path) {
  ServerConfig c;
  std::ifstream in(path);
  if (!in) return c;
  std::string line, section;
  int lineno = 0;
  auto bad = [&](const std::string& what) {
    return Error(fmt::format("{}:{}: {}", path, lineno, what),
                 "keys: backend, advertise_url; in [slurm]: partition, account, option");
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos && (hash == 0 || std::isspace(line[hash - 1])))
      line = line.substr(0, hash);
    line = trim(line);
    if (line.empty() || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') throw bad("malformed section header '" + line + "'");
      section = trim(line.substr(1, line.size() - 2));
      if (section != "slurm") throw bad("unknown section [" + section + "]");
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) throw bad("expected 'key = value', got '" + line + "'");
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    if (section.empty() && key == "backend") c.backend = value;
    else if (section.empty() && key == "advertise_url") c.advertise_url = value;
    else if (section == "slurm" && key == "partition") c.slurm_partition = value;
    else if (section == "slurm" && key == "account") c.slurm_account = value;
    else if (section == "slurm" && key == "option") c.slurm_options.push_back(value);
    else throw bad(fmt::format("unknown key '{}'{}", key, section.empty() ? "" : " in [" + section + "]"));
  }
  return c;
}

}  // namespace air::server
