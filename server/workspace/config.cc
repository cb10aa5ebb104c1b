// Parsing $AIR_HOME/server.conf:
//
//   backend = slurm
//   advertise_url = http://10.0.0.5:8470
//   [slurm]
//   partition = gpu
//   account = ml-team
//   option = --qos=high        # repeatable
//   partition.long = gpu-long  # compute.pool_id 'long' -> --partition=gpu-long
//   qos.CRITICAL = high        # priority_class -> --qos (or nice.BEST_EFFORT = 1000 -> --nice)
//   [pools]                    # the local backend's GPU pools, in GPU index order
//   training = 6
//   [scheduler]
//   default_runtime_minutes = 60
//   preemption = true
#include "server/workspace/config.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>

#include "core/base/error.h"

namespace air::server {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool is_class(const std::string& s) { return s == "BEST_EFFORT" || s == "NORMAL" || s == "CRITICAL"; }

std::optional<int> to_int(const std::string& s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The scheduler's keys: [pools], [scheduler], and the pool and class maps of [slurm].
template <class Bad>
void read_scheduling(ServerConfig& c, const std::string& section, const std::string& key, const std::string& value,
                     const Bad& bad) {
  auto dot = key.find('.');
  std::string head = key.substr(0, dot), name = dot == std::string::npos ? "" : key.substr(dot + 1);
  if (section == "pools") {
    auto n = to_int(value);
    if (!n || *n < 0) throw bad(fmt::format("pool '{}' needs a number of GPUs (>= 0), got '{}'", key, value));
    for (const auto& [p, g] : c.pools)
      if (p == key) throw bad(fmt::format("pool '{}' is defined twice", key));
    c.pools.emplace_back(key, *n);
  } else if (section == "scheduler" && key == "default_runtime_minutes") {
    auto n = to_int(value);
    if (!n || *n < 1) throw bad(fmt::format("'default_runtime_minutes' must be a whole number >= 1, got '{}'", value));
    c.default_runtime_minutes = *n;
  } else if (section == "scheduler" && key == "preemption") {
    if (value != "true" && value != "false") throw bad("'preemption' must be true or false, got '" + value + "'");
    c.preemption = value == "true";
  } else if (section == "slurm" && head == "partition" && !name.empty()) {
    c.slurm_pool_partitions[name] = value;
  } else if (section == "slurm" && (head == "qos" || head == "nice") && !name.empty()) {
    if (!is_class(name))
      throw bad(fmt::format("unknown priority class '{}' in '{}' (BEST_EFFORT, NORMAL or CRITICAL)", name, key));
    if (head == "qos") {
      c.slurm_class_qos[name] = value;
    } else if (auto n = to_int(value)) {
      c.slurm_class_nice[name] = *n;
    } else {
      throw bad(fmt::format("'{}' must be a whole number, got '{}'", key, value));
    }
  } else {
    throw bad(fmt::format("unknown key '{}' in [{}]", key, section));
  }
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
                 "keys: backend, advertise_url; in [slurm]: partition, account, option, partition.POOL, "
                 "qos.CLASS, nice.CLASS; in [pools]: NAME = GPUs; in [scheduler]: default_runtime_minutes, "
                 "preemption; [fair_share], [shares], [quotas]: docs/scheduler.md");
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
      if (section != "slurm" && section != "pools" && section != "scheduler" && !sched::is_fair_section(section))
        throw bad("unknown section [" + section + "]");
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
    else if (section == "slurm" || section == "pools" || section == "scheduler") read_scheduling(c, section, key, value, bad);
    else if (sched::is_fair_section(section)) {
      if (std::string why = sched::read_fair_line(c.fair, section, key, value); !why.empty()) throw bad(why);
    }
    else throw bad(fmt::format("unknown key '{}'{}", key, section.empty() ? "" : " in [" + section + "]"));
  }
  return c;
}

}  // namespace air::server
