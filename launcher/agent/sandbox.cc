// How the node's command is sealed off (docs/security.md, "Threat model"): the run sandbox (bubblewrap:
// own PID namespace and mount tree, the run's volumes at /Volumes), as the owner's own unix account where
// the agent is root; or, where this node cannot build one, the command as before with a notice, and
// AIR_VOLUMES_ROOT naming the volume storage.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "core/client/config.h"
#include "launcher/agent/node_agent.h"
#include "launcher/agent/setup.h"

namespace air::launcher {

namespace fs = std::filesystem;

namespace {

// The command's own files (its code, its HOME) belong to the account it runs as. keep_files: regular files
// stay as they are (code from the node's code cache: links to files shared with other runs, which must stay
// read-only to the command); the folders and symlinks are still handed over.
void give_to(const std::string& path, const UnixAccount& a, bool keep_files = false) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  if (::lchown(path.c_str(), a.uid, a.gid) != 0) throw Error("cannot hand " + path + " to " + a.name);
  if (!fs::is_directory(fs::symlink_status(path, ec))) return;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (keep_files && it->symlink_status(ec).type() == fs::file_type::regular) continue;
    if (::lchown(it->path().c_str(), a.uid, a.gid) != 0) throw Error("cannot hand " + it->path().string() + " to " + a.name);
  }
}

std::vector<VolumeMount> volume_mounts(const api::NodeSpec& spec, std::string& shown) {
  std::vector<VolumeMount> mounts;
  for (const auto& v : spec.volumes) {
    bool ro = std::find(spec.read_only_volumes.begin(), spec.read_only_volumes.end(), v) != spec.read_only_volumes.end();
    mounts.push_back({v, ro});
    shown += " /Volumes/" + v + (ro ? " (read-only)" : "");
  }
  return mounts;
}

// A venv's interpreter lives where it was made from (pyvenv.cfg's `home`, say a pyenv install under /root):
// that installation, read-only, unless it is in the system already.
std::string venv_base(const std::string& venv) {
  std::ifstream cfg(venv + "/pyvenv.cfg");
  for (std::string line; std::getline(cfg, line);) {
    if (line.rfind("home", 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) return "";
    std::string home = line.substr(eq + 1);
    home.erase(0, home.find_first_not_of(" \t"));
    while (!home.empty() && (home.back() == ' ' || home.back() == '\r')) home.pop_back();
    std::error_code ec;
    std::string prefix = fs::canonical(home, ec).parent_path().string();
    if (ec || prefix.empty() || prefix == "/" || path_is_under(prefix, "/usr")) return "";
    return prefix;
  }
  return "";
}

}  // namespace

std::string sandbox_unavailable(const NodeAgentOptions& o) { return o.sandbox_checked ? "" : probe_sandbox(); }

bool runs_as_other_account(const NodeAgentOptions& o, const std::string& why) {
  return why.empty() && !o.run_as.empty() && ::geteuid() == 0;
}

SandboxSetup prepare_sandbox(const api::NodeSpec& spec, const NodeAgentOptions& o, const std::string& why,
                             const std::string& node_dir, const CommandPaths& paths, const std::string& venv,
                             std::vector<std::string>& env, AgentLog& log) {
  SandboxSetup out;
  bool have_volumes = !spec.volumes_root.empty() && !spec.volumes.empty();
  std::error_code ec;
  if (have_volumes)
    for (const auto& v : spec.volumes) fs::create_directories(fs::path(spec.volumes_root) / v, ec);  // made on first use
  // As root, a sandboxed command runs as the owner's own account (the workspace names it): its code and
  // HOME are its own, and a volume it may write is writable by it (the mount, not the mode, says who sees
  // it). Without a sandbox it stays the workspace's account, as before: the account alone cannot reach the
  // code under a private $AIR_HOME, and a workspace of several users refuses such runs (isolation.h).
  if (runs_as_other_account(o, why)) {
    out.account = ensure_unix_account(o.run_as);
    give_to(paths.code_dir, out.account, paths.code_shared);
    if (have_volumes)
      for (const auto& v : spec.volumes)
        if (std::find(spec.read_only_volumes.begin(), spec.read_only_volumes.end(), v) == spec.read_only_volumes.end())
          if (auto why = share_volume_folder((fs::path(spec.volumes_root) / v).string()); !why.empty()) log.info(why);
    overlay_env(env, {{"USER", out.account.name}, {"LOGNAME", out.account.name}});
  }
  const bool as_other = !out.account.name.empty();
  if (why.empty()) {
    // HOME in the node's folder: the workspace account's home is not in the sandbox.
    std::string home = node_dir + "/home";
    fs::create_directories(home, ec);
    if (as_other) give_to(home, out.account);
    overlay_env(env, {{"HOME", home}});
    SandboxSpec s;
    s.node_dir = node_dir;
    s.read_only = {paths.bin_dir, venv};
    if (!venv.empty()) s.read_only.push_back(venv_base(venv));
    s.hidden = {air_home(), spec.volumes_root};
    s.volumes_root = spec.volumes_root;
    std::string shown;
    if (have_volumes) s.volumes = volume_mounts(spec, shown);
    s.cwd = paths.code_dir;
    s.run_as = as_other ? &out.account : nullptr;
    out.argv_prefix = sandbox_argv(s);
    log.info("sandbox: bubblewrap (own PID namespace and mount tree" +
             std::string(as_other ? ", unix account " + out.account.name : ", user namespace") + ")" +
             (have_volumes ? "; volumes: /Volumes is " + spec.volumes_root + ", only" + shown : ""));
    return out;
  }
  if (o.require_sandbox)
    throw Error("this node cannot seal the command off (" + why +
                ") and the workspace has more than one user: refusing to run it without a sandbox "
                "(install bubblewrap and allow user namespaces, or start the workspace with --single-trust-domain)");
  out.notice = "sandbox: none on this node (" + why + "): the command sees this machine as the node agent does";
  log.info(out.notice);
  if (have_volumes) {
    std::string volumes = volumes_fallback_notice(why, spec.volumes_root);
    log.info(volumes);
    out.notice += "\nair node: " + volumes;
    for (auto it = env.begin(); it != env.end();)
      it = it->rfind("AIR_VOLUMES_ROOT=", 0) == 0 ? env.erase(it) : it + 1;
    env.push_back("AIR_VOLUMES_ROOT=" + spec.volumes_root);
  }
  return out;
}

}  // namespace air::launcher
