// Node logs as files: $home/runs/<run>/attempt_<k>/node_<n>.log, whose size is the append offset. Appends
// are idempotent by offset (a retried chunk is neither lost nor repeated) and readers can long-poll for
// growth, which is how `air logs --follow` sees a line within milliseconds of its arrival.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/base/writeback.h"

namespace air::server {

// A log append the file system refused; err is the errno (ENOSPC: the workspace's disk is full).
struct LogWriteError : std::runtime_error {
  LogWriteError(const std::string& what, int err) : std::runtime_error(what), err(err) {}
  int err;
};

struct LogKey {
  std::string run_id;
  int attempt = 1, node = 0;
  bool operator<(const LogKey& o) const {
    return std::tie(run_id, attempt, node) < std::tie(o.run_id, o.attempt, o.node);
  }
};

struct AppendResult {
  bool gap = false;   // offset was beyond the stored size: nothing written
  uint64_t size = 0;  // the stored size after the call
};

struct LogChunk {
  uint64_t offset = 0;  // where data starts
  uint64_t size = 0;    // the log's size when read
  std::string data;
};

class LogStore {
 public:
  explicit LogStore(std::string runs_dir) : runs_dir_(std::move(runs_dir)) {}

  std::string path(const LogKey& k) const;
  // offset == size: append; offset + len <= size: no-op; offset < size < offset + len: append the tail;
  // offset > size: gap.
  AppendResult append(const LogKey& k, uint64_t offset, std::string_view data);
  uint64_t size(const LogKey& k);
  // Up to max_bytes from offset, cut at the last whole line when more remains. Never waits: a follower waits
  // in the HTTP server as a deferred response, re-polled on every append and wake() (set_listener).
  LogChunk read(const LogKey& k, uint64_t offset, uint64_t max_bytes);
  // The offset where the last `lines` lines start.
  uint64_t tail_offset(const LogKey& k, uint64_t lines);
  // Tells the listener (the HTTP server's deferred log reads) that a run's state changed, so "done" may have.
  void wake();
  // Called on every append and wake() (the HTTP server re-polls its deferred log reads); must not block.
  void set_listener(std::function<void()> f);

 private:
  struct Entry {
    std::mutex mu;
    uint64_t size = 0;
    bool loaded = false;
    int fd = -1;  // open for appends while the log grows: one open() per log, not one per chunk
    uint64_t last_use = 0;
    air::WritebackPacer pacer;  // bounded dirty data per log (core/base/writeback.h)
  };
  Entry& entry(const LogKey& k);
  // The entry's append fd (opened, and its folder made, on first use). Call with e.mu held.
  int append_fd(const LogKey& k, Entry& e);
  // Keeps at most kMaxOpen fds: closes the least recently used other than `keep` (e.mu held for keep).
  void limit_open(Entry* keep);
  void close_fd(Entry& e);  // e.mu held
  static constexpr size_t kMaxOpen = 64;

  std::string runs_dir_;
  std::mutex mu_;  // guards entries_ and the listener
  std::map<LogKey, std::unique_ptr<Entry>> entries_;
  std::function<void()> listener_;
  std::mutex fds_mu_;  // guards open_ and use_clock_; taken after an entry's mu, never before
  std::vector<Entry*> open_;
  uint64_t use_clock_ = 0;

 public:
  ~LogStore();
};

}  // namespace air::server
