// Bounded dirty data for an append-only file (a node's log spool, a stored log). Each file keeps at most
// about two windows of written-but-unflushed bytes: when a window fills, its writeback starts
// (sync_file_range WRITE, asynchronous) and the window before it is waited for. A writer producing faster
// than the disk then waits for its own data, instead of the whole machine's dirty pages reaching the
// kernel's limit, where every writer of every process (a node printing one line, the workspace appending
// it) is throttled for seconds. Measured: bench/logs.sh's latency probe while 8 nodes write (docs/performance.md).
#pragma once

#include <fcntl.h>

#include <cstdint>

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

}  // namespace air
