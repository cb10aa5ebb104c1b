// The sandbox every run's command runs in (docs/security.md, "Threat model"): bubblewrap with its own PID
// namespace and mount tree, where the system is read-only and only the node's own folders, its Python
// environment and its volumes are visible; and, where the workspace runs as root, the owner's own
// unprivileged unix account. Nothing of $AIR_HOME, the blob store, the database, the key files, other runs
// or other commands' /proc.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace air {

// One volume a run may use: "catalog/schema/volume", read-only where its owner may only read it.
struct VolumeMount {
  std::string key;
  bool read_only = false;
};

// The unix account a command runs as (as root: the owner's own; else the caller's).
struct UnixAccount {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

struct SandboxSpec {
  std::string node_dir;                 // read-write at its own path (CODE_SOURCE_PATH and HOME are inside)
  std::vector<std::string> read_only;   // more host folders, read-only at their own paths (air's bin, the venv)
  std::vector<std::string> hidden;      // never visible, even below a system folder ($AIR_HOME, volume storage)
  std::string volumes_root;             // host folder of /Volumes/<key>
  std::vector<VolumeMount> volumes;
  std::string cwd;
  const UnixAccount* run_as = nullptr;  // root only: drop to this account inside (setpriv); null: stay
};

// argv words to put before a command so that it runs in the sandbox. Without run_as, bubblewrap makes an
// unprivileged user namespace (the caller's uid mapped onto itself); with it (root), bubblewrap runs
// privileged and setpriv drops to the account with no capabilities and no_new_privs. Start it with SIGTERM,
// SIGINT and SIGHUP ignored: the last words give them back to the command (env --default-signal), so a
// signal to the whole process group reaches the command and not bwrap.
std::vector<std::string> sandbox_argv(const SandboxSpec& spec);

// argv words that drop from root to `account`: setpriv (the sandbox's last step as root).
std::vector<std::string> drop_privileges_argv(const UnixAccount& account);

// Builds a sandbox around `true` once: "" when it works on this machine, else a one-line reason (bwrap
// missing, user namespaces disabled). AIR_SANDBOX=off in the environment answers "AIR_SANDBOX=off" (tests,
// and an admin whose nodes cannot run bubblewrap).
std::string probe_sandbox();

// Whether `path` is `dir` or lies below it (both absolute and normal).
bool path_is_under(const std::string& path, const std::string& dir);

// The account air runs `owner`'s commands as when the workspace is root: "air-u-" + the name in letters,
// digits, '_' and '-' (others become '-'), at most 32 characters (useradd's limit) with a hash suffix when
// shortened or changed, so that two owners never share one.
std::string owner_unix_account_name(const std::string& owner);

// Looks `name` up, creating it first (useradd: a system account with its own group, no home, no login
// shell) when it is one of air's own "air-u-*" accounts and missing. Throws air::Error saying why not.
UnixAccount ensure_unix_account(const std::string& name);

// Makes a volume's host folder shared by every account whose runs mount it read-write (a root workspace:
// each owner's commands run as their own account): the folder 0777 with a default POSIX ACL of rwx for
// owner, group and others, so that what any run or the Files API makes inside inherits it (new folders
// 0777, new files 0666 whatever the creating process's umask) and a user with WRITE_VOLUME can write into a
// subfolder another account's run made. Who reaches the folder at all is the mounts' and the parent
// folders' business (docs/security.md). The first time (no default ACL yet) the folders and files already
// inside are opened the same way. Where the file system keeps no ACLs the folder is only made 0777 and the
// answer says so (for the node log); "" when shared. Throws air::Error when the folder cannot be changed.
std::string share_volume_folder(const std::string& dir);

// The fallback's message for /Volumes, said once at submit and in the node log.
std::string volumes_fallback_notice(const std::string& why, const std::string& storage);

}  // namespace air
