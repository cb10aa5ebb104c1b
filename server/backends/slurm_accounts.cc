// Folders and accounts for Slurm jobs that run as their owner (slurm_accounts.h).
#include "server/backends/slurm_accounts.h"

#include <fmt/format.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/base/error.h"
#include "server/backends/command_runner.h"

namespace air::server {

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::milliseconds kAdminTimeout{30000};  // groupadd, usermod: local files, or a directory service

bool lookup_group(const std::string& name, gid_t& gid, std::vector<std::string>* members = nullptr) {
  struct group gr {}, *res = nullptr;
  std::vector<char> buf(1 << 16);
  if (::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &res) != 0 || !res) return false;
  gid = gr.gr_gid;
  if (members)
    for (char** m = gr.gr_mem; m && *m; ++m) members->emplace_back(*m);
  return true;
}

void admin_command(const std::vector<std::string>& argv, int also_ok, const std::string& what) {
  CommandResult r = run_command(argv, kAdminTimeout);
  if (r.exit_code == 0 || (also_ok != 0 && r.exit_code == also_ok)) return;
  throw Error("cannot " + what + ": " + describe_failure(argv[0], r, kAdminTimeout),
              "the workspace runs as root so that each user's Slurm jobs run as their own account");
}

// kJobsGroup exists and `a` is in it (a job gets its supplementary groups from the node's group database).
gid_t ensure_jobs_group(const UnixAccount& a) {
  gid_t gid = 0;
  std::vector<std::string> members;
  if (!lookup_group(kJobsGroup, gid)) {
    admin_command({"groupadd", "--system", kJobsGroup}, 9, fmt::format("create the group {}", kJobsGroup));  // 9: exists
    if (!lookup_group(kJobsGroup, gid)) throw Error(fmt::format("the group {} was made but cannot be found", kJobsGroup));
  }
  lookup_group(kJobsGroup, gid, &members);
  if (std::find(members.begin(), members.end(), a.name) == members.end())
    admin_command({"usermod", "--append", "--groups", kJobsGroup, a.name}, 0,
                  fmt::format("add {} to the group {}", a.name, kJobsGroup));
  return gid;
}

void set_owner_mode(const std::string& path, uid_t uid, gid_t gid, mode_t mode) {
  if (::chown(path.c_str(), uid, gid) != 0 || ::chmod(path.c_str(), mode) != 0)
    throw Error(fmt::format("cannot set the owner and mode of {}: {}", path, std::strerror(errno)));
}

void check_searchable_above(const std::string& dir, const UnixAccount& a, gid_t jobs) {
  if (auto why = folder_closed_above(dir, a, jobs); !why.empty())
    throw Error(why, "let every account search that folder (chmod o+x), or move the folder below folders "
                     "that others may search");
}

}  // namespace

std::string folder_closed_above(const std::string& dir, const UnixAccount& a, gid_t jobs) {
  for (auto p = fs::path(dir).parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return fmt::format("cannot read {}: {}", p.string(), std::strerror(errno));
    // The kernel's order: the owner's bits for its owner, the group's for a member, else the others'.
    bool ok = st.st_uid == a.uid ? (st.st_mode & S_IXUSR)
              : (st.st_gid == a.gid || st.st_gid == jobs) ? (st.st_mode & S_IXGRP)
                                                          : (st.st_mode & S_IXOTH);
    if (!ok)
      return fmt::format("the Slurm job of this run runs as {}, which cannot enter {} (mode {:04o}), a folder above {}",
                         a.name, p.string(), st.st_mode & 07777, dir);
    if (p == p.root_path()) break;
  }
  return "";
}

UnixAccount prepare_owner_job(const AttemptLaunch& l) {
  UnixAccount a = ensure_unix_account(l.run_as);
  gid_t jobs = ensure_jobs_group(a);
  fs::path attempt(l.attempt_dir), run = attempt.parent_path(), runs = run.parent_path(), home = runs.parent_path();
  check_searchable_above(home.string(), a, jobs);
  set_owner_mode(home.string(), 0, jobs, 0710);
  set_owner_mode(runs.string(), 0, 0, 0711);
  set_owner_mode(run.string(), 0, 0, 0711);
  set_owner_mode(attempt.string(), a.uid, a.gid, 0700);
  std::error_code ec;
  fs::create_directories(home / "envs", ec);
  set_owner_mode((home / "envs").string(), 0, jobs, 02770);
  if (!l.volumes.empty()) {
    fs::create_directories(l.volumes_root, ec);
    if (ec) throw Error(fmt::format("cannot create the volume storage {}: {}", l.volumes_root, ec.message()));
    // Outside $AIR_HOME the folders above the storage must let the account through too; the storage root
    // itself (0700 as the workspace makes it) opens to the group only.
    if (!path_is_under(fs::path(l.volumes_root).lexically_normal().string(), home.lexically_normal().string()))
      check_searchable_above(l.volumes_root, a, jobs);
    set_owner_mode(l.volumes_root, 0, jobs, 0710);
    for (const auto& v : l.volumes) {
      std::string dir = (fs::path(l.volumes_root) / v).string();
      fs::create_directories(dir, ec);
      if (ec) throw Error(fmt::format("cannot create the volume folder {}: {}", dir, ec.message()));
      // The catalog and schema folders between: searchable (the store makes them 0755 under a usual umask).
      for (auto p = fs::path(dir).parent_path(); p.string().size() > l.volumes_root.size(); p = p.parent_path())
        fs::permissions(p, fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add, ec);
      bool ro = std::find(l.read_only_volumes.begin(), l.read_only_volumes.end(), v) != l.read_only_volumes.end();
      if (ro)
        fs::permissions(dir, fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add, ec);
      else
        share_volume_folder(dir);  // without ACLs: 0777 alone (docs/security.md says what that leaves)
    }
  }
  return a;
}

std::string slurm_job_accounts_note(bool root) {
  return root ? "; each job is submitted as its owner's own unix account (sbatch --uid=air-u-<user>): Slurm "
                "accounts it to them and their job reaches only its own run folder"
              : "; jobs are submitted as this workspace's unix account (not root: Slurm sees one user), so the "
                "sandbox on each node is the only wall between users' runs";
}

std::vector<std::string> owner_job_options(const UnixAccount& a) {
  return {"--uid=" + a.name, fmt::format("--gid={}", a.gid)};
}

}  // namespace air::server
