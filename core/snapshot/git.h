// code_source.snapshot.git: a snapshot of a committed state instead of the working tree. `commit` packs
// exactly that commit, `branch` the committed head of a local branch (refused while the working tree has
// uncommitted changes under the included paths). `git archive` semantics: tracked files only, ignore rules
// irrelevant. Runs `git` as a child process.
#pragma once
#include <string>
#include <vector>

#include "core/snapshot/snapshot.h"

namespace air {

struct GitSnapshotSource {
  std::string mode;    // "commit" | "branch"
  std::string ref;     // as written: the commit id or branch name
  std::string commit;  // the full commit id it resolved to
  std::string dir;     // the commit's tree under root_path, exported (a cache folder: do not modify)
};

// Resolves the ref in the repository holding root, refuses a dirty branch, and exports the tree under root
// (only include_paths when given) into cache_dir/<commit>-<hash of root prefix and include_paths>, reused
// when present. Throws air::Error with the reference CLI's messages: "git.* is set but P is not a git
// repository", an unknown commit or branch, "uncommitted changes under P would not be included: ...".
GitSnapshotSource export_git_snapshot(const std::string& root, const std::string& branch, const std::string& commit,
                                      const std::vector<std::string>& include_paths, const std::string& cache_dir);

// The manifest of an exported tree: every file in it (all tracked: no ignore rule applies), with the
// credential-like ones flagged as scan_snapshot does.
SnapshotManifest manifest_of_export(const GitSnapshotSource& src, const std::vector<std::string>& include_paths);

}  // namespace air
