// The node's cache of unpacked snapshots (docs/agent.md, "Code on a node"): a snapshot is unpacked once per
// digest and account on a node; each node of each run then gets its own CODE_SOURCE_PATH whose folders are
// new (the run's own: it may add, remove and rename files there) and whose files are hard links to the
// cached copy, owned by the agent (root) and so read-only to the command's account. No inode is made per
// file and no byte is decompressed or hashed again: on an ext4 that other work keeps deleting from, making
// each file's inode was the largest part of a node's start (docs/performance.md, "Submit to RUNNING").
// Used only where the command runs as another account than the agent (a root agent with the run sandbox
// and --run-as): there the links cannot be written through, so one run cannot change another's code.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

#include "core/snapshot/snapshot.h"

namespace air::launcher {

struct CodeCachePlacement {
  bool unpacked = false;  // this call unpacked the archive into the cache (a miss)
  size_t links = 0;       // files linked into code_dir
};

// Gives code_dir (new, or an empty folder) the tree of snapshot `digest` from cache_dir/<digest>: on a miss
// the archive that `archive_path()` returns is unpacked there first (safely, within `limits`), under a lock
// on cache_dir, so that two nodes starting together unpack once. Keeps the `keep` most recently used
// entries of cache_dir. Throws air::Error (code_dir then holds whatever was made: the caller removes it);
// what archive_path() throws passes through.
CodeCachePlacement place_cached_code(const std::string& cache_dir, const std::string& digest,
                                     const std::function<std::string()>& archive_path, const std::string& code_dir,
                                     const UnpackLimits& limits, size_t keep = 4);

}  // namespace air::launcher
