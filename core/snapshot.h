// The code snapshot: which files of code_source.snapshot.root_path go in (git ignore semantics plus
// .airignore), a manifest of them for the dry-run, and a deterministic archive named by its SHA-256.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace air {

struct SnapshotFile {
  std::string path;  // relative to the root, '/'-separated
  uint64_t size = 0;
};

struct IgnoreRuleCount {
  std::string source;   // ".gitignore:3", "sub/.gitignore:1", ".airignore:2", "built-in"
  std::string pattern;  // as written
  uint64_t files_excluded = 0;
};

struct SnapshotManifest {
  std::string root;                       // absolute
  std::vector<SnapshotFile> files;        // sorted by path
  uint64_t total_bytes = 0;
  std::vector<SnapshotFile> largest;      // up to 10, largest first
  std::vector<IgnoreRuleCount> excluded;  // rules that excluded at least one file
  std::vector<std::string> credential_like;  // included files that look like credentials (.env, keys, .netrc)
};

// Walks root (restricted to include_paths when non-empty). Throws air::Error on unreadable trees.
SnapshotManifest scan_snapshot(const std::string& root, const std::vector<std::string>& include_paths);

struct SnapshotArchive {
  std::string path;    // the archive file written
  std::string sha256;  // hex digest of the archive bytes
  uint64_t bytes = 0;
};

// Writes a deterministic archive of the manifest's files (sorted entries, fixed mtime/owner/mode bits) to
// out_path. The same tree always gives the same bytes and digest.
SnapshotArchive write_snapshot_archive(const SnapshotManifest& m, const std::string& out_path);

struct UnpackLimits {
  uint64_t max_total_bytes = 8ull << 30;
  uint64_t max_entries = 1'000'000;
};

// Unpacks an archive into dest safely: refuses absolute paths, '..', links pointing outside dest, device
// files, and size or entry-count bombs. Throws air::Error naming the offending entry.
void unpack_snapshot(const std::string& archive_path, const std::string& dest, const UnpackLimits& limits = {});

}  // namespace air
