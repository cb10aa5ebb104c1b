// bubblewrap argv for the /Volumes namespace, and a probe that tells whether it works on this machine.
#include "core/volumes/namespace.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

extern char** environ;

namespace air {

namespace fs = std::filesystem;

std::vector<std::string> volumes_ns_prefix(const std::string& storage, const std::vector<VolumeMount>& mounts,
                                           const std::string& cwd) {
  // --die-with-parent: the command dies with bwrap, as it would with the agent (a killed agent leaves nothing).
  std::vector<std::string> a = {"bwrap", "--die-with-parent"};
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator("/", ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    if (n == "Volumes" || n == "proc" || n == "dev") continue;
    std::string p = "/" + n;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      std::error_code e2;
      auto target = fs::read_symlink(p, e2);
      if (!e2) a.insert(a.end(), {"--symlink", target.string(), p});
    } else {
      a.insert(a.end(), {"--bind", p, p});
    }
  }
  // /dev as it is (GPUs), /proc as it is (no pid namespace: signals and pids stay the host's).
  a.insert(a.end(), {"--dev-bind", "/dev", "/dev", "--bind", "/proc", "/proc"});
  // Only the run's volumes appear under /Volumes (bwrap makes the folders above them in its tmpfs root).
  if (mounts.empty()) a.insert(a.end(), {"--bind", storage, "/Volumes"});
  for (const auto& m : mounts)
    a.insert(a.end(), {m.read_only ? "--ro-bind" : "--bind", storage + "/" + m.key, "/Volumes/" + m.key});
  if (!cwd.empty()) a.insert(a.end(), {"--chdir", cwd});
  a.push_back("--");
  return a;
}

std::string probe_volumes_ns(const std::string& storage) {
  // Lets a test (or an admin whose nodes misbehave under bubblewrap) take the fallback on purpose.
  if (const char* v = std::getenv("AIR_VOLUMES_NS"); v && std::string(v) == "off") return "AIR_VOLUMES_NS=off";
  std::error_code ec;
  fs::create_directories(storage, ec);
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return "cannot create a pipe";  // no other child may inherit it
  auto argv_s = volumes_ns_prefix(storage, {}, "/");
  argv_s.push_back("true");
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  // posix_spawn, not fork: the workspace calls this from a thread of a multi-threaded server.
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while (rc == 0 && (n = ::read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  if (rc != 0) return rc == ENOENT ? "bwrap (Debian package bubblewrap) is not installed" : "cannot start bwrap";
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (auto nl = out.rfind('\n'); nl != std::string::npos) out = out.substr(nl + 1);
  return out.empty() ? "bwrap failed" : out;
}

std::string volumes_fallback_notice(const std::string& why, const std::string& storage) {
  return "volumes: cannot give the command a private /Volumes (" + why +
         "); it sees the volumes at AIR_VOLUMES_ROOT=" + storage +
         " instead (air-train maps a /Volumes/... output_dir through it; other programs must do the same)";
}

}  // namespace air
