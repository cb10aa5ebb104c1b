// The code snapshot: which files of code_source.snapshot.root_path go in (git ignore semantics plus
// .airignore), a manifest of them for the dry-run, and a deterministic archive named by its SHA-256.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace air {

struct SnapshotFile {
  std::string path;  // relative to the root, '/'-separated
  uint64_t size = 0;
  bool executable = false;  // any x bit set: stored as 0755, else 0644
  bool symlink = false;     // stored as a symlink to link_target (always relative, inside the root)
  std::string link_target;
  // What the cache fingerprint is made of (lstat of the file at scan time).
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t inode = 0;
};

struct SkippedFile {
  std::string path;
  std::string reason;  // e.g. "symlink to a path outside the root (/etc/passwd)", "fifo"
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
  std::vector<std::string> include_paths;    // normalized; empty = the whole root
  std::vector<SkippedFile> skipped;          // neither excluded nor included: unsafe symlinks, fifos, ...
  uint64_t files_excluded = 0;               // sum of excluded[].files_excluded
  int64_t scanned_at_ns = 0;                 // wall clock when the scan started (for the cache's race check)
};

// True when a file looks like a credential by its name (.env, *.pem, id_rsa, .netrc, ...) or, for
// .npmrc/.pypirc, by `content_head` (the file's first bytes; empty when not read).
bool looks_like_credential(const std::string& rel_path, const std::string& content_head);

// Walks root (restricted to include_paths when non-empty). Throws air::Error on unreadable trees.
SnapshotManifest scan_snapshot(const std::string& root, const std::vector<std::string>& include_paths);
// ignore_files false: .gitignore and .airignore are not read (a git export, where every file is tracked).
SnapshotManifest scan_snapshot(const std::string& root, const std::vector<std::string>& include_paths,
                               bool ignore_files);

// Drops every file under `dir` when it lies strictly inside m.root, and records it as a built-in exclusion
// named `rule` (used for $AIR_HOME). Returns how many files were dropped.
uint64_t exclude_subtree(SnapshotManifest& m, const std::string& dir, const std::string& rule);

struct SnapshotArchive {
  std::string path;    // the archive file written
  std::string sha256;  // hex digest of the archive bytes
  uint64_t bytes = 0;
};

// Writes a deterministic archive of the manifest's files (sorted entries, fixed mtime/owner/mode bits) to
// out_path. The same tree always gives the same bytes and digest, on any number of cores.
// The archive holds the files at its root (no top-level folder), in path order, mtime 0, uid/gid 0, no
// owner names, modes 0644/0755, symlinks as symlinks; no directory entries: a ustar stream (pax records
// only for long or non-ASCII names and sizes of 8 GiB or more), compressed with zstd (level 1, one frame per
// 2 MiB of tar stream, compressed on several threads). Archives written by earlier versions (libarchive's
// pax-restricted zstd, one frame) unpack the same way.
// Written to a temporary file next to out_path and renamed: never a half-written archive.
SnapshotArchive write_snapshot_archive(const SnapshotManifest& m, const std::string& out_path);

// Called while the archive is written with the content bytes done so far and the total (for a progress
// bar: after each file, and every few MB inside large ones). Throwing from it aborts cleanly.
using SnapshotProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;
SnapshotArchive write_snapshot_archive(const SnapshotManifest& m, const std::string& out_path,
                                       const SnapshotProgress& progress);
// threads: compressor threads (0 = snapshot_threads()); the bytes do not depend on it (tests pass 1, 2 and 8).
SnapshotArchive write_snapshot_archive(const SnapshotManifest& m, const std::string& out_path,
                                       const SnapshotProgress& progress, int threads);
// The CPUs this process may run on (sched_getaffinity: taskset, cgroup cpusets), 1 to 16.
int snapshot_threads();

// A digest of the scanned tree's metadata (paths, sizes, modes, link targets, mtime/ctime, inodes): equal
// fingerprints mean the archive would be the same, without reading a byte of content.
std::string snapshot_fingerprint(const SnapshotManifest& m);

// write_snapshot_archive through a cache in cache_dir (created if missing): an unchanged tree reuses the
// archive written last time (cache_dir/<sha256>.tar.zst) without reading any file. Keeps the few most
// recently used archives. `reused` (optional) tells whether the cache answered.
SnapshotArchive snapshot_with_cache(const SnapshotManifest& m, const std::string& cache_dir,
                                    bool* reused = nullptr, const SnapshotProgress& progress = {});

// What one unpack may use. Disk use is counted in 4 KiB blocks (a 1-byte file, a folder and a symlink
// each take one), so a million tiny files count as the ~4 GB they really take.
struct UnpackLimits {
  uint64_t max_total_bytes = 8ull << 30;      // `air server --max-unpack-bytes`
  uint64_t max_entries = 1'000'000;           // `air server --max-unpack-entries`
  uint64_t max_ratio = 200;                   // at most this many times the archive's own size...
  uint64_t ratio_floor_bytes = 256ull << 20;  // ...or this much, whichever is larger
  uint64_t keep_free_bytes = 256ull << 20;    // never fill the destination's disk below this
};

// Unpacks an archive into dest safely: refuses absolute paths, '..', links pointing outside dest, device
// files, and size or entry-count bombs. Throws air::Error naming the offending entry.
void unpack_snapshot(const std::string& archive_path, const std::string& dest, const UnpackLimits& limits = {});

}  // namespace air
