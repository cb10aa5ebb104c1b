// Slurm's view of the node for the agent: hostlist expansion, SLURM_NODEID / SLURM_JOB_NUM_NODES, and the
// master's address resolved from the first allocated host (all nodes resolve the same name, so all agree).
#include "launcher/agent/slurm_env.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include "core/base/error.h"
#include "launcher/agent/node_agent.h"

extern char** environ;

namespace air::launcher {

namespace {

// Splits at commas outside brackets.
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) throw Error("bad Slurm hostlist '" + s + "': unbalanced ']'");
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) throw Error("bad Slurm hostlist '" + s + "': unbalanced '['");
  out.push_back(cur);
  return out;
}

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

std::vector<std::string> expand_one(const std::string& item, const std::string& whole) {
  auto open = item.find('[');
  if (open == std::string::npos) return {item};
  auto close = item.find(']', open);
  std::string prefix = item.substr(0, open), body = item.substr(open + 1, close - open - 1);
  std::vector<std::string> rest = expand_one(item.substr(close + 1), whole);
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t comma = body.find(',', pos);
    std::string range = body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    auto dash = range.find('-');
    std::string lo = range.substr(0, dash), hi = dash == std::string::npos ? lo : range.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 9 || hi.size() > 9)
      throw Error("bad Slurm hostlist '" + whole + "': range '" + range + "'");
    long a = std::stol(lo), b = std::stol(hi);
    if (b < a || b - a > 100000) throw Error("bad Slurm hostlist '" + whole + "': range '" + range + "'");
    for (long v = a; v <= b; ++v) {
      std::string num = std::to_string(v);
      if (num.size() < lo.size()) num = std::string(lo.size() - num.size(), '0') + num;
      for (const auto& r : rest) out.push_back(prefix + num + r);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

int env_int(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty())
    throw Error(fmt::format("{} is not set: `air node --slurm` runs inside a Slurm job step (srun)", name));
  if (!all_digits(it->second) || it->second.size() > 9)
    throw Error(fmt::format("{}='{}' is not a number", name, it->second));
  return std::stoi(it->second);
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> out;
  for (const auto& item : split_top(list)) {
    if (item.empty()) continue;
    for (auto& h : expand_one(item, list)) out.push_back(std::move(h));
  }
  return out;
}

std::map<std::string, std::string> environment_map() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string s(*e);
    auto eq = s.find('=');
    if (eq != std::string::npos) env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return env;
}

void apply_slurm_node(NodeAgentOptions& o, const std::map<std::string, std::string>& env) {
  o.node = env_int(env, "SLURM_NODEID");
  for (auto p = o.workdir.find("%n"); p != std::string::npos; p = o.workdir.find("%n", p))
    o.workdir.replace(p, 2, std::to_string(o.node));
}

std::string resolve_host(const std::string& host) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) throw Error(fmt::format("cannot resolve the master host '{}': {}", host, gai_strerror(rc)));
  // A host's own name often maps to 127.0.1.1 on that host only; the others need its real address.
  std::string v4, v6, loop;
  for (auto* p = res; p; p = p->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {0};
    if (p->ai_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(p->ai_addr);
      inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
      bool lo = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
      if (lo && loop.empty()) loop = buf;
      if (!lo && v4.empty()) v4 = buf;
    } else if (p->ai_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(p->ai_addr);
      inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
      if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr)) {
        if (loop.empty()) loop = buf;
      } else if (v6.empty()) {
        v6 = buf;
      }
    }
  }
  ::freeaddrinfo(res);
  if (!v4.empty()) return v4;
  if (!v6.empty()) return v6;
  if (!loop.empty()) return loop;
  throw Error(fmt::format("the master host '{}' has no address", host));
}

void apply_slurm_spec(api::NodeSpec& spec, const std::map<std::string, std::string>& env) {
  int nodes = env_int(env, "SLURM_JOB_NUM_NODES");
  if (nodes != spec.num_nodes)
    throw Error(fmt::format("Slurm gave this job {} node(s) but the run needs {}", nodes, spec.num_nodes));
  spec.node_rank = env_int(env, "SLURM_NODEID");
  auto it = env.find("SLURM_JOB_NODELIST");
  if (it == env.end() || it->second.empty()) throw Error("SLURM_JOB_NODELIST is not set");
  auto hosts = expand_hostlist(it->second);
  if (hosts.empty()) throw Error("SLURM_JOB_NODELIST '" + it->second + "' names no host");
  spec.master_addr = resolve_host(hosts.front());
}

}  // namespace air::launcher
