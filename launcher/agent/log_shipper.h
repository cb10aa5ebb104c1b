// The node's log path: framed lines go to a spool file on disk first (LogSpool), and a shipper thread
// (LogShipper) sends them to the workspace from the last acknowledged offset, in chunks of whole lines.
// Appends are idempotent by offset on the server, so retries neither lose nor repeat a line; while the
// workspace is unreachable the spool keeps growing and the shipper catches up when it comes back.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/client/client.h"
#include "core/base/writeback.h"

namespace air::launcher {

class LogSpool {
 public:
  // Creates or truncates the spool file. max_bytes 0: no limit.
  explicit LogSpool(std::string path, uint64_t max_bytes = 0);
  ~LogSpool();
  LogSpool(const LogSpool&) = delete;
  LogSpool& operator=(const LogSpool&) = delete;

  // Appends whole framed lines. Past max_bytes the rest is dropped after one marker line. Returns false
  // (and keeps the file consistent) when the disk refuses the write.
  bool append(std::string_view lines);
  uint64_t size() const { return size_.load(std::memory_order_acquire); }
  uint64_t dropped_bytes() const { return dropped_.load(); }
  // Reads up to max bytes from offset into out (replacing it).
  void read(uint64_t offset, size_t max, std::string& out) const;
  const std::string& path() const { return path_; }

 private:
  bool write_all(std::string_view data);
  std::string path_, dir_;  // dir_: the spool's folder (for the free-space check)
  uint64_t max_bytes_;
  int write_fd_ = -1, read_fd_ = -1;
  std::atomic<uint64_t> size_{0};
  std::atomic<uint64_t> dropped_{0};
  bool truncated_ = false;
  uint64_t unchecked_ = 0;  // bytes written since free space was last checked
  WritebackPacer pacer_;  // bounded dirty data (core/base/writeback.h)
};

struct ShipperOptions {
  std::string path;  // "/api/air/v1/runs/R/attempts/K/nodes/N/logs"; "?offset=O" is added
  size_t max_chunk = 1 << 20;
  std::chrono::milliseconds min_backoff{50};
  std::chrono::milliseconds max_backoff{1000};
  long request_timeout_ms = 30000;
  std::function<void(const std::string&)> log;  // diagnostics (agent.log); may be empty
};

struct ShipperStats {
  uint64_t requests = 0, failures = 0, gaps = 0;
};

class LogShipper {
 public:
  LogShipper(LogSpool& spool, std::unique_ptr<Client> client, ShipperOptions options);
  ~LogShipper();  // stops the thread (without waiting for the spool to drain)
  void start();
  // New data is in the spool: ship it now (or with the next batch when a request is in flight).
  void notify();
  // Waits until everything in the spool is acknowledged or the deadline passes; true when drained.
  bool drain(std::chrono::steady_clock::time_point deadline);
  void stop();
  uint64_t acked() const { return acked_.load(); }
  ShipperStats stats() const;
  // How long the workspace has been refusing every chunk for lack of disk (HTTP 507) without a success in
  // between; zero when it is not.
  std::chrono::steady_clock::duration out_of_space_for() const;

 private:
  void loop();
  // One request from acked_; returns false on a failure that calls for backoff.
  bool ship_once(std::string& chunk);
  void note(const std::string& message);

  LogSpool& spool_;
  std::unique_ptr<Client> client_;
  ShipperOptions options_;
  std::atomic<uint64_t> acked_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool notified_ = false;
  bool failing_ = false;
  std::chrono::steady_clock::time_point full_since_{};  // first 507 of the current run of refusals
  ShipperStats stats_;
  std::thread thread_;
};

}  // namespace air::launcher
