// bubblewrap argv for the run sandbox, the probe that tells whether it works here, and the owners' accounts.
#include "core/sandbox/sandbox.h"

#include <endian.h>
#include <fcntl.h>
#include <glob.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/sha256.h"

extern char** environ;

namespace air {

namespace fs = std::filesystem;

namespace {

// The system, read-only: programs, libraries, their configuration. Not /home, /root, /srv, /mnt, /var,
// /run, /tmp (private): whatever else lives on the machine stays out of reach.
constexpr const char* kSystem[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"};

// Device files a GPU job needs besides bwrap's minimal /dev (null, zero, random, tty, pts, shm).
constexpr const char* kDevices[] = {"/dev/nvidia*", "/dev/nvidia-caps", "/dev/nvidia-caps-imex-channels",
                                    "/dev/infiniband", "/dev/dri"};

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

// Runs argv with stdout+stderr captured; returns the exit status (-1: not started, with out = why).
int spawn_and_wait(const std::vector<std::string>& argv_s, std::string& out) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {  // no other child may inherit it
    out = "cannot create a pipe";
    return -1;
  }
  std::vector<char*> argv;
  for (const auto& s : argv_s) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  // posix_spawn, not fork: the workspace calls this from a thread of a multi-threaded server.
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  char buf[512];
  ssize_t n;
  while (rc == 0 && ((n = ::read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  if (rc != 0) {
    out = rc == ENOENT ? argv_s[0] + " is not installed" : "cannot start " + argv_s[0] + ": " + std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (auto nl = s.rfind('\n'); nl != std::string::npos) s = s.substr(nl + 1);
  return s;
}

}  // namespace

bool path_is_under(const std::string& path, const std::string& dir) {
  if (dir.empty()) return false;
  std::string d = dir.back() == '/' ? dir : dir + "/";
  return path == dir || path.compare(0, d.size(), d) == 0;
}

std::vector<std::string> drop_privileges_argv(const UnixAccount& a) {
  // No supplementary groups (root's), no capabilities left in any set, and no way back (no_new_privs: a
  // set-uid program gains nothing).
  return {"setpriv", "--reuid=" + std::to_string(a.uid), "--regid=" + std::to_string(a.gid), "--clear-groups",
          "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"};
}

std::vector<std::string> sandbox_argv(const SandboxSpec& s) {
  // --die-with-parent: the command dies with bwrap, as it would with the agent (a killed agent leaves
  // nothing). No --new-session: the agent signals the command's process group, which bwrap keeps.
  std::vector<std::string> a = {"bwrap", "--die-with-parent"};
  if (!s.run_as) a.push_back("--unshare-user");  // as root the account change is the user boundary
  a.insert(a.end(), {"--unshare-pid", "--unshare-ipc"});
  std::vector<std::string> bound, parents;
  std::vector<std::array<std::string, 3>> mounts;
  for (const char* p : kSystem) {
    struct stat st {};
    if (::lstat(p, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      auto target = fs::read_symlink(p, ec);
      if (!ec) a.insert(a.end(), {"--symlink", target.string(), p});
    } else if (S_ISDIR(st.st_mode)) {
      a.insert(a.end(), {"--ro-bind", p, p});
      bound.push_back(p);
    }
  }
  // /etc/resolv.conf may point into /run (systemd-resolved): that one file, so names still resolve.
  std::error_code ec;
  auto resolv = fs::canonical("/etc/resolv.conf", ec).string();
  if (!ec && !path_is_under(resolv, "/etc") && !path_is_under(resolv, "/usr")) a.insert(a.end(), {"--ro-bind", resolv, resolv});
  // /sys read-only: CUDA and NCCL read the PCI topology there.
  a.insert(a.end(), {"--ro-bind-try", "/sys", "/sys", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm"});
  for (const char* pattern : kDevices) {
    glob_t g{};
    if (::glob(pattern, 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) a.insert(a.end(), {"--dev-bind", g.gl_pathv[i], g.gl_pathv[i]});
    ::globfree(&g);
  }
  // Its own /proc (only its processes: no other command's environ or cmdline), a private /tmp.
  a.insert(a.end(), {"--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--tmpfs", "/var/tmp"});
  // A workspace folder below a system folder (say $AIR_HOME=/opt/air) is covered by an empty tmpfs.
  for (const auto& h : s.hidden)
    for (const auto& b : bound)
      if (path_is_under(h, b) && exists(h)) {
        a.insert(a.end(), {"--tmpfs", h});
        break;
      }
  // bwrap makes the folders above a mount point 0700 root: made here first, 0755, so that an unprivileged
  // account can reach its code. Those inside a bound system folder exist already (unless hidden).
  auto bind = [&](const char* how, const std::string& from, const std::string& to) {
    for (auto p = fs::path(to).parent_path(); p.has_relative_path(); p = p.parent_path()) {
      std::string dir = p.string();
      bool in_system = std::any_of(bound.begin(), bound.end(), [&](const std::string& b) { return path_is_under(dir, b); });
      bool in_hidden = std::any_of(s.hidden.begin(), s.hidden.end(),
                                   [&](const std::string& h) { return dir != h && path_is_under(dir, h); });
      if (in_system && !in_hidden) break;
      parents.push_back(dir);
    }
    mounts.push_back({how, from, to});
  };
  for (const auto& r : s.read_only)
    if (!r.empty()) bind("--ro-bind", r, r);
  if (!s.node_dir.empty()) bind("--bind", s.node_dir, s.node_dir);
  // Only the run's volumes appear under /Volumes.
  for (const auto& m : s.volumes)
    bind(m.read_only ? "--ro-bind" : "--bind", s.volumes_root + "/" + m.key, "/Volumes/" + m.key);
  std::sort(parents.begin(), parents.end());  // parents before children
  parents.erase(std::unique(parents.begin(), parents.end()), parents.end());
  for (const auto& p : parents) a.insert(a.end(), {"--perms", "0755", "--dir", p});
  for (const auto& m : mounts) a.insert(a.end(), {m[0], m[1], m[2]});
  // The sandbox's own root (the bare folders above its mounts) read-only: in a user namespace its owner
  // is the command's account, which could otherwise make files at any path outside its mounts (they would
  // vanish with it, but a command must not seem to write where nothing is shared).
  a.insert(a.end(), {"--remount-ro", "/"});
  if (!s.cwd.empty()) a.insert(a.end(), {"--chdir", s.cwd});
  a.push_back("--");
  if (s.run_as) {
    auto drop = drop_privileges_argv(*s.run_as);
    a.insert(a.end(), drop.begin(), drop.end());
  }
  // bwrap starts with the stop signals ignored (its caller's doing: SpawnOptions::wrapped) so that a stop's
  // SIGTERM reaches the command without ending bwrap, whose end would SIGKILL it at once; the command gets
  // them back.
  a.insert(a.end(), {"env", "--default-signal=TERM,INT,HUP", "--"});
  return a;
}

std::string probe_sandbox() {
  if (const char* v = std::getenv("AIR_SANDBOX"); v && std::string(v) == "off") return "AIR_SANDBOX=off";
  SandboxSpec spec;
  spec.cwd = "/";
  UnixAccount nobody{"nobody", 65534, 65534};
  if (::geteuid() == 0) spec.run_as = &nobody;  // setpriv too: the real sandbox needs it as root
  auto argv = sandbox_argv(spec);
  argv.push_back("true");
  std::string out;
  int rc = spawn_and_wait(argv, out);
  if (rc == 0) return "";
  if (rc < 0) return out == "bwrap is not installed" ? "bwrap (Debian package bubblewrap) is not installed" : out;
  out = last_line(out);
  return out.empty() ? "bwrap failed (exit code " + std::to_string(rc) + ")" : out;
}

std::string owner_unix_account_name(const std::string& owner) {
  std::string clean;
  for (char c : owner) {
    unsigned char u = static_cast<unsigned char>(c);
    clean += std::isalnum(u) ? static_cast<char>(std::tolower(u)) : (c == '_' || c == '-') ? c : '-';
  }
  std::string name = "air-u-" + clean;
  // A changed or shortened name gets 8 hex digits of the owner's hash: alice and Alice stay two accounts.
  if (clean != owner || name.size() > 32) name = name.substr(0, 23) + "-" + sha256_hex(owner).substr(0, 8);
  return name;
}

UnixAccount ensure_unix_account(const std::string& name) {
  auto lookup = [&](UnixAccount& out) {
    struct passwd pw {}, *res = nullptr;
    std::vector<char> buf(16384);
    if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &res) != 0 || !res) return false;
    out = {name, pw.pw_uid, pw.pw_gid};
    return true;
  };
  UnixAccount a;
  if (lookup(a)) return a;
  if (name.rfind("air-u-", 0) != 0)
    throw Error("no unix account '" + name + "' on this machine", "create it, or let air use its own air-u-* accounts");
  std::string out;
  // Exit code 9: another agent of the same owner created it a moment ago.
  int rc = spawn_and_wait({"useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                           "--shell", "/usr/sbin/nologin", "--comment", "air workspace user (run commands)", name},
                          out);
  if ((rc != 0 && rc != 9) || !lookup(a))
    throw Error("cannot create the unix account '" + name + "' for the run's commands: " +
                    (out.empty() ? "useradd failed" : last_line(out)),
                "the workspace runs as root so that each user's commands run as their own account");
  if (a.uid == 0) throw Error("the unix account '" + name + "' is root: refusing to run a command as it");
  return a;
}

namespace {

// A minimal POSIX ACL (owner, group and others rwx) in the kernel's xattr form (linux/posix_acl_xattr.h:
// a little-endian version word, then tag/perm/id entries sorted by tag).
std::string open_default_acl() {
  auto le16 = [](std::string& s, uint16_t v) { v = htole16(v); s.append(reinterpret_cast<const char*>(&v), 2); };
  auto le32 = [](std::string& s, uint32_t v) { v = htole32(v); s.append(reinterpret_cast<const char*>(&v), 4); };
  std::string acl;
  le32(acl, 2);                                       // POSIX_ACL_XATTR_VERSION
  for (uint16_t tag : {0x01, 0x04, 0x20}) {           // ACL_USER_OBJ, ACL_GROUP_OBJ, ACL_OTHER
    le16(acl, tag);
    le16(acl, 7);                                     // rwx
    le32(acl, 0xffffffffu);                           // ACL_UNDEFINED_ID
  }
  return acl;
}

constexpr const char* kDefaultAcl = "system.posix_acl_default";

// false: the file system keeps no ACLs (the folder is 0777 all the same).
bool open_folder(const std::string& dir, const std::string& acl) {
  if (::chmod(dir.c_str(), 0777) != 0) throw Error("cannot open the volume folder " + dir + ": " + std::strerror(errno));
  if (::setxattr(dir.c_str(), kDefaultAcl, acl.data(), acl.size(), 0) == 0) return true;
  if (errno == ENOTSUP || errno == EOPNOTSUPP) return false;
  throw Error("cannot give the volume folder " + dir + " a default ACL: " + std::strerror(errno));
}

}  // namespace

std::string share_volume_folder(const std::string& dir) {
  std::string acl = open_default_acl();
  char have[64];
  ssize_t n = ::getxattr(dir.c_str(), kDefaultAcl, have, sizeof have);
  bool had_acl = n == static_cast<ssize_t>(acl.size()) && std::memcmp(have, acl.data(), acl.size()) == 0;
  struct stat st {};
  if (had_acl && ::stat(dir.c_str(), &st) == 0 && (st.st_mode & 07777) == 0777) return "";  // the usual case
  if (!open_folder(dir, acl))
    return "volumes: " + dir + " keeps no POSIX ACLs (its file system has none): what one account's run makes "
           "inside follows that run's umask, so a user with WRITE_VOLUME may not write into it";
  if (had_acl) return "";
  // The first time: what earlier runs and uploads made inside (folders 0755, files 0644 under their makers'
  // umask) is opened too; links are left alone.
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    auto kind = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(kind)) {
      open_folder(it->path().string(), acl);
    } else if (fs::is_regular_file(kind)) {
      fs::permissions(it->path(), fs::perms::owner_write | fs::perms::group_read | fs::perms::group_write |
                                      fs::perms::others_read | fs::perms::others_write | fs::perms::owner_read,
                      fs::perm_options::add, ec);
    }
  }
  return "";
}

std::string volumes_fallback_notice(const std::string& why, const std::string& storage) {
  return "volumes: cannot give the command a private /Volumes (" + why + "); it sees the volumes at AIR_VOLUMES_ROOT=" +
         storage + " instead (air-train maps a /Volumes/... output_dir through it; other programs must do the same)";
}

}  // namespace air
