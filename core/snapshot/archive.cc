// write_snapshot_archive: a deterministic tar (pax restricted, fixed metadata), zstd-compressed by
// libarchive on several threads, hashed with SHA-256 while it streams to disk.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/base/sha256.h"
#include "core/snapshot/snapshot.h"

namespace air {
namespace {

// Where the compressed bytes go: the file, and the hash of exactly those bytes.
struct Sink {
  int fd = -1;
  Sha256 hash;
  uint64_t bytes = 0;
  int error = 0;
};

la_ssize_t sink_write(struct archive* a, void* client, const void* buf, size_t n) {
  auto* s = static_cast<Sink*>(client);
  const char* p = static_cast<const char*>(buf);
  size_t left = n;
  while (left > 0) {
    ssize_t w = ::write(s->fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      s->error = errno;
      archive_set_error(a, errno, "write failed");
      return -1;
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  s->hash.update(buf, n);
  s->bytes += n;
  return static_cast<la_ssize_t>(n);
}

std::string archive_text(struct archive* a) {
  const char* msg = archive_error_string(a);
  return msg ? msg : "unknown libarchive error";
}

using ArchivePtr = std::unique_ptr<struct archive, int (*)(struct archive*)>;
using EntryPtr = std::unique_ptr<struct archive_entry, void (*)(struct archive_entry*)>;

Error archive_error(struct archive* a, const std::string& what) {
  // libarchive keeps the system's errno: say "No space left on device" rather than only "write failed".
  const int err = archive_errno(a);
  std::string why = archive_text(a);
  if (err > 0 && why.find(std::strerror(err)) == std::string::npos) why += " (" + std::string(std::strerror(err)) + ")";
  return Error("cannot write the snapshot archive (" + what + "): " + why,
               err == ENOSPC ? "free disk space where the snapshot cache is ($AIR_HOME)" : "");
}

// zstd's output does not depend on the number of workers once there is at least one, so the digest is
// the same on every machine; more threads only make it faster.
// The CPUs this process may run on (taskset, cgroup cpusets), not all the machine has.
int zstd_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int n = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(n, 1, 8);
}

ArchivePtr open_writer(Sink* sink) {
  ArchivePtr a(archive_write_new(), archive_write_free);
  if (!a) throw Error("libarchive: out of memory");
  if (archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
      archive_write_add_filter_zstd(a.get()) != ARCHIVE_OK)
    throw archive_error(a.get(), "zstd");
  // Level 1: the snapshot is written on every submit and usually uploaded over a fast network.
  if (archive_write_set_filter_option(a.get(), "zstd", "compression-level", "1") != ARCHIVE_OK)
    throw archive_error(a.get(), "zstd level");
  std::string threads = std::to_string(zstd_threads());
  if (archive_write_set_filter_option(a.get(), "zstd", "threads", threads.c_str()) != ARCHIVE_OK)
    throw archive_error(a.get(), "zstd threads");
  archive_write_set_bytes_per_block(a.get(), 1 << 16);
  archive_write_set_bytes_in_last_block(a.get(), 1);
  if (archive_write_open2(a.get(), sink, nullptr, sink_write, nullptr, nullptr) != ARCHIVE_OK)
    throw archive_error(a.get(), "open");
  return a;
}

EntryPtr make_entry(const SnapshotFile& f) {
  EntryPtr e(archive_entry_new(), archive_entry_free);
  archive_entry_copy_pathname(e.get(), f.path.c_str());
  if (f.symlink) {
    archive_entry_set_filetype(e.get(), AE_IFLNK);
    archive_entry_set_perm(e.get(), 0777);
    archive_entry_copy_symlink(e.get(), f.link_target.c_str());
    archive_entry_set_size(e.get(), 0);
  } else {
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), f.executable ? 0755 : 0644);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(f.size));
  }
  archive_entry_set_mtime(e.get(), 0, 0);
  archive_entry_set_uid(e.get(), 0);
  archive_entry_set_gid(e.get(), 0);
  return e;
}

Error changed_error(const SnapshotFile& f) {
  return Error("'" + f.path + "' changed while the snapshot was being written",
               "run the command again once the file stops changing, or exclude it in .airignore");
}

// Streams one regular file's bytes into the archive; it must still be the file the scan saw.
void copy_content(struct archive* a, int root_fd, const SnapshotFile& f, std::vector<char>& buf,
                  const std::function<void(uint64_t)>& advance) {
  int fd = ::openat(root_fd, f.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read '" + f.path + "': " + std::strerror(errno));
  std::unique_ptr<int, void (*)(int*)> guard(&fd, [](int* p) { ::close(*p); });
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != f.size)
    throw changed_error(f);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  uint64_t left = f.size;
  while (left > 0) {
    ssize_t n = ::read(fd, buf.data(), std::min<uint64_t>(buf.size(), left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read '" + f.path + "': " + std::strerror(errno));
    if (n == 0) throw changed_error(f);  // shrank after the scan: the header already promised f.size
    if (archive_write_data(a, buf.data(), static_cast<size_t>(n)) < 0) throw archive_error(a, f.path);
    left -= static_cast<uint64_t>(n);
    advance(static_cast<uint64_t>(n));
  }
}

std::string temp_name_for(const std::string& out_path) {
  std::random_device rd;
  return out_path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
}

}  // namespace

SnapshotArchive write_snapshot_archive(const SnapshotManifest& m, const std::string& out_path) {
  return write_snapshot_archive(m, out_path, SnapshotProgress{});
}

SnapshotArchive write_snapshot_archive(const SnapshotManifest& m, const std::string& out_path,
                                       const SnapshotProgress& progress) {
  int root_fd = ::open(m.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) throw Error("cannot read snapshot root '" + m.root + "': " + std::strerror(errno));
  std::unique_ptr<int, void (*)(int*)> root_guard(&root_fd, [](int* p) { ::close(*p); });

  std::string tmp = temp_name_for(out_path);
  Sink sink;
  sink.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (sink.fd < 0) throw Error("cannot create '" + tmp + "': " + std::strerror(errno));
  try {
    ArchivePtr a = open_writer(&sink);
    std::vector<char> buf(1 << 20);
    uint64_t done = 0, reported = 0;
    auto advance = [&](uint64_t n) {
      done += n;
      if (progress && done - reported >= (8u << 20)) {
        reported = done;
        progress(done, m.total_bytes);
      }
    };
    for (const SnapshotFile& f : m.files) {
      EntryPtr e = make_entry(f);
      if (archive_write_header(a.get(), e.get()) < ARCHIVE_WARN) throw archive_error(a.get(), f.path);
      if (!f.symlink) copy_content(a.get(), root_fd, f, buf, advance);
    }
    if (archive_write_close(a.get()) != ARCHIVE_OK) throw archive_error(a.get(), "close");
    if (sink.error) throw Error("cannot write '" + out_path + "': " + std::strerror(sink.error));
    if (::close(sink.fd) != 0) {
      sink.fd = -1;
      throw Error("cannot write '" + out_path + "': " + std::strerror(errno));
    }
    sink.fd = -1;
    if (::rename(tmp.c_str(), out_path.c_str()) != 0)
      throw Error("cannot write '" + out_path + "': " + std::strerror(errno));
  } catch (...) {
    if (sink.fd >= 0) ::close(sink.fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (progress) progress(m.total_bytes, m.total_bytes);
  return SnapshotArchive{out_path, sink.hash.hex_digest(), sink.bytes};
}

}  // namespace air
