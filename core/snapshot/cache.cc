// The snapshot cache: a tree whose metadata fingerprint was seen before reuses the archive written
// then, so an unchanged re-submit costs one scan. Entries are small files named by the fingerprint.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/base/error.h"
#include "core/base/sha256.h"
#include "core/snapshot/snapshot.h"

namespace air {
namespace {

namespace fs = std::filesystem;

// Bump when anything that changes the archive's bytes changes (format, compression settings).
constexpr const char* kFormatTag = "air-snapshot v2 ustar zstd-1 frames-2MiB\n";
// A file modified this close to the scan may change again within the same mtime tick, unseen by the
// fingerprint (git's "racy clean" problem): a tree with such files is archived but not remembered.
// (ctime is in the fingerprint too, but any content change also moves mtime, so mtime decides.)
constexpr int64_t kRacyWindowNs = 2'000'000'000;
constexpr size_t kKeepArchives = 4;

std::string entry_path(const std::string& dir, const std::string& fp) { return dir + "/" + fp + ".entry"; }
std::string archive_path(const std::string& dir, const std::string& sha) { return dir + "/" + sha + ".tar.zst"; }

bool is_hex_digest(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(c) && !std::isupper(c); });
}

bool racy(const SnapshotManifest& m) {
  for (const auto& f : m.files)
    if (f.mtime_ns >= m.scanned_at_ns - kRacyWindowNs) return true;
  return false;
}

// Reads "sha256 bytes" from an entry; false when missing or malformed.
bool read_entry(const std::string& path, std::string* sha, uint64_t* bytes) {
  std::ifstream in(path);
  std::string tag;
  if (!(in >> tag >> *sha >> *bytes) || tag != "v1") return false;
  return is_hex_digest(*sha);
}

void write_entry(const std::string& path, const SnapshotArchive& a) {
  std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "v1 " << a.sha256 << " " << a.bytes << "\n";
    if (!out) return;  // the cache is an optimisation: failing to remember is not an error
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

// Keeps the most recently used archives (their mtime is bumped on reuse) and drops the rest, with the
// entries that point at them.
void prune(const std::string& dir) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> archives;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() > 8 && name.substr(name.size() - 8) == ".tar.zst") {
      archives.emplace_back(e.last_write_time(ec), e.path());
    } else if (name.size() > 6 && name.substr(name.size() - 6) == ".entry") {
      entries.push_back(e.path());
    } else if (name.find(".tmp-") != std::string::npos || name.rfind("writing-", 0) == 0) {
      // Left by a process that died mid-write; an hour is far longer than any archive takes.
      auto age = fs::file_time_type::clock::now() - e.last_write_time(ec);
      if (!ec && age > std::chrono::hours(1)) fs::remove(e.path(), ec);
    }
  }
  if (archives.size() <= kKeepArchives) return;
  std::sort(archives.begin(), archives.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = kKeepArchives; i < archives.size(); ++i) fs::remove(archives[i].second, ec);
  for (const auto& e : entries) {
    std::string sha;
    uint64_t bytes = 0;
    if (!read_entry(e.string(), &sha, &bytes) || !fs::exists(archive_path(dir, sha))) fs::remove(e, ec);
  }
}

}  // namespace

std::string snapshot_fingerprint(const SnapshotManifest& m) {
  Sha256 h;
  h.update(kFormatTag);
  std::string line;
  for (const auto& f : m.files) {
    line.clear();
    line += f.path;
    line += '\0';
    line += std::to_string(f.size) + (f.executable ? " x " : " - ") + (f.symlink ? "l " : "f ");
    line += f.link_target;
    line += '\0';
    line += std::to_string(f.mtime_ns) + " " + std::to_string(f.ctime_ns) + " " + std::to_string(f.inode) + "\n";
    h.update(line);
  }
  return h.hex_digest();
}

SnapshotArchive snapshot_with_cache(const SnapshotManifest& m, const std::string& cache_dir, bool* reused,
                                    const SnapshotProgress& progress) {
  if (reused) *reused = false;
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) throw Error("cannot create the snapshot cache '" + cache_dir + "': " + ec.message());

  std::string fp = snapshot_fingerprint(m);
  std::string sha;
  uint64_t bytes = 0;
  if (read_entry(entry_path(cache_dir, fp), &sha, &bytes)) {
    std::string path = archive_path(cache_dir, sha);
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == bytes) {
      ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // most recently used: survives pruning
      if (reused) *reused = true;
      return SnapshotArchive{path, sha, bytes};
    }
  }

  std::random_device rd;
  std::string scratch = cache_dir + "/writing-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  SnapshotArchive a = write_snapshot_archive(m, scratch, progress);
  std::string final_path = archive_path(cache_dir, a.sha256);
  if (::rename(scratch.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    ::unlink(scratch.c_str());
    throw Error("cannot write '" + final_path + "': " + std::strerror(err));
  }
  a.path = final_path;
  if (!racy(m)) write_entry(entry_path(cache_dir, fp), a);
  prune(cache_dir);
  return a;
}

}  // namespace air
