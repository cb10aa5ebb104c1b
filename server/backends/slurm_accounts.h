// Slurm jobs of a root workspace run as their owner's own unix account (`sbatch --uid/--gid`), so that
// Slurm's accounting, limits and permissions see the user and one user's job cannot touch another's
// processes or run folder (docs/security.md, "Threat model"). A non-root workspace submits as itself.
#pragma once
#include <string>

#include "core/sandbox/sandbox.h"
#include "server/backends/backend.h"

namespace air::server {

// The group of air's own accounts: the one group that may enter $AIR_HOME (and the volume storage) to reach
// its own run folder and the volumes it mounts. Nobody else on the cluster may.
inline constexpr const char* kJobsGroup = "air-runs";

// What a job submitted as its owner's account needs on the shared file system, made before `sbatch --uid`
// (as root, on the workspace's machine, which shares --home and the volume storage with the nodes):
// - the owner's account (air-u-<user>, made here with useradd when missing: the nodes must resolve the same
//   name and ids, so give the cluster one passwd database) and its membership of kJobsGroup;
// - $AIR_HOME and the volume storage root:kJobsGroup 0710 (search only, no listing), `runs/` and the
//   run's folder 0711, the attempt folder the owner's own 0700 (Slurm's output, the agents' logs, the node
//   folders); `envs/` (Python environments the agents build) root:kJobsGroup 02770;
// - the volumes the run mounts made, read-write ones shared (share_volume_folder), read-only ones readable;
// - every folder above $AIR_HOME searchable by the account, else an Error naming the folder and the fix.
// Returns the account.
UnixAccount prepare_owner_job(const AttemptLaunch& l);

// "" when `a` (whose groups are its own and kJobsGroup's id `jobs`) may search every folder above `dir`,
// else which folder stops it (the submission's error).
std::string folder_closed_above(const std::string& dir, const UnixAccount& a, gid_t jobs);

// What `air server` and `air server status` say about whose account a Slurm job runs as: the owner's
// (root workspace) or this workspace's, where the run sandbox is then the only wall between users.
std::string slurm_job_accounts_note(bool root);

// The sbatch options that submit as `a` (appended before the batch script).
std::vector<std::string> owner_job_options(const UnixAccount& a);

}  // namespace air::server
