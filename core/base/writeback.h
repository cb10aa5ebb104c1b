// Bounded dirty data for an append-only file (a node's log spool, a stored log). Each file keeps at most
// about two windows of written-but-unflushed bytes: when a window fills, its writeback starts
// (sync_file_range WRITE, asynchronous) and the window before it is waited for. A writer producing faster
// than the disk then waits for its own data, instead of the whole machine's dirty pages reaching the
// kernel's limit, where every writer of every process (a node printing one line, the workspace appending
// it) is throttled for seconds. Measured: bench/logs.sh's latency probe while 8 nodes write (docs/performance.md).
#pragma once

#include <fcntl.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace air {

class WritebackPacer {
 public:
  static constexpr uint64_t kWindow = uint64_t{32} << 20;

  // Called after `bytes` were appended at `end - bytes`; `end` is the file's new length.
  void wrote(int fd, uint64_t end) {
    if (end < next_) return;
    const uint64_t start = next_ >= kWindow ? next_ - kWindow : 0;
    // The window that just filled: start its writeback without waiting.
    ::sync_file_range(fd, static_cast<off64_t>(start), static_cast<off64_t>(end - start), SYNC_FILE_RANGE_WRITE);
    // The one before: wait until it is on disk (its writeback started a window ago, so usually it is).
    if (start >= kWindow)
      ::sync_file_range(fd, static_cast<off64_t>(start - kWindow), static_cast<off64_t>(kWindow),
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    next_ = end + kWindow;
  }
  // A new file (or one reopened at `size`).
  void reset(uint64_t size) { next_ = size + kWindow; }

 private:
  uint64_t next_ = kWindow;
};

// Logs stop short of filling a disk: writing `bytes` under `dir` must leave 1/8 of the file system (at most
// 64 MiB) free, so that the workspace's database (same disk in the local workspace) can still record why a
// run's logs stopped. False when it would not; true when the file system cannot be asked.
inline bool leaves_disk_reserve(const std::string& dir, uint64_t bytes) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return true;
  const uint64_t total = static_cast<uint64_t>(v.f_blocks) * v.f_frsize;
  const uint64_t avail = static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
  return avail >= bytes + std::min<uint64_t>(total / 8, uint64_t{64} << 20);
}

}  // namespace air
