// /proc and loopback ports (core/base/host.h).
#include "core/base/host.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace air {

std::optional<ProcStat> read_proc_stat(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return std::nullopt;
  // The command name (field 2) is in parentheses and may hold spaces and ')': the fields after it start
  // after the last ')'.
  auto rp = line.rfind(')');
  if (rp == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(rp + 1));
  ProcStat s;
  s.pid = pid;
  if (!(rest >> s.state >> s.ppid >> s.pgrp >> s.session)) return std::nullopt;
  return s;
}

std::vector<ProcStat> list_processes() {
  std::vector<ProcStat> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    if (auto s = read_proc_stat(static_cast<int>(pid))) out.push_back(*s);
  }
  ::closedir(d);
  return out;
}

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

}  // namespace air
