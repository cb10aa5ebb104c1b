// LogSpool (append-only file, read by offset) and LogShipper (the thread that ships it by offset).
#include "launcher/agent/log_shipper.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/wire/api.h"
#include "core/base/error.h"
#include "core/logs/framing.h"

namespace air::launcher {

using logs::unix_time_ms;

namespace {
constexpr size_t kMarkerReserve = 256;

// A 409 whose error body (api::ErrorBody) says LOG_GAP: the workspace holds another size than our offset.
bool is_log_gap(const nlohmann::json& body) {
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return false;
  try {
    return body["error"].get<api::ErrorBody>().code == "LOG_GAP";
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}
}  // namespace

LogSpool::LogSpool(std::string path, uint64_t max_bytes) : path_(std::move(path)), max_bytes_(max_bytes) {
  dir_ = path_.find('/') == std::string::npos ? "." : path_.substr(0, path_.rfind('/') + 1);
  write_fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (write_fd_ < 0) throw Error("cannot create the log spool " + path_ + ": " + std::strerror(errno));
  read_fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (read_fd_ < 0) {
    close(write_fd_);
    throw Error("cannot read the log spool " + path_ + ": " + std::strerror(errno));
  }
  if (max_bytes_ > 0 && max_bytes_ < 2 * kMarkerReserve) max_bytes_ = 2 * kMarkerReserve;
}

LogSpool::~LogSpool() {
  close(write_fd_);
  close(read_fd_);
}

bool LogSpool::write_all(std::string_view data) {
  uint64_t start = size_.load();
  // core/base/writeback.h: the last free space is not for logs (asked once per MiB written: a syscall).
  unchecked_ += data.size();
  if (unchecked_ >= (1u << 20)) {
    if (!leaves_disk_reserve(dir_, unchecked_)) {
      errno = ENOSPC;
      return false;
    }
    unchecked_ = 0;
  }
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(write_fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Never leave half a line behind: the shipper would send it and the next line would be glued on.
      if (ftruncate(write_fd_, static_cast<off_t>(start)) != 0) {
      }
      return false;
    }
    done += static_cast<size_t>(n);
  }
  size_.store(start + data.size(), std::memory_order_release);  // the shipper may send it now
  pacer_.wrote(write_fd_, start + data.size());
  return true;
}

bool LogSpool::append(std::string_view lines) {
  if (lines.empty()) return true;
  if (truncated_) {
    dropped_ += lines.size();
    return true;
  }
  uint64_t size = size_.load();
  if (max_bytes_ == 0 || size + lines.size() <= max_bytes_ - kMarkerReserve) return write_all(lines);
  uint64_t room = max_bytes_ - kMarkerReserve > size ? max_bytes_ - kMarkerReserve - size : 0;
  size_t keep = 0;
  if (room > 0) {
    size_t nl = lines.rfind('\n', static_cast<size_t>(room) - 1);
    keep = nl == std::string_view::npos ? 0 : nl + 1;
  }
  if (keep > 0 && !write_all(lines.substr(0, keep))) return false;
  char marker[kMarkerReserve];
  int n = std::snprintf(marker, sizeof marker,
                        "%lld e [air] log truncated: max_log_bytes (%llu) reached; later output is dropped\n",
                        static_cast<long long>(unix_time_ms()), static_cast<unsigned long long>(max_bytes_));
  truncated_ = true;
  dropped_ += lines.size() - keep;
  return write_all(std::string_view(marker, static_cast<size_t>(n)));
}

void LogSpool::read(uint64_t offset, size_t max, std::string& out) const {
  // Only what append() has published: a chunk of a few lines zeroes a few bytes, not max (1 MiB) each time.
  uint64_t end = size();
  max = end > offset ? static_cast<size_t>(std::min<uint64_t>(max, end - offset)) : 0;
  out.resize(max);
  size_t got = 0;
  while (got < max) {
    ssize_t n = pread(read_fd_, out.data() + got, max - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
}

LogShipper::LogShipper(LogSpool& spool, std::unique_ptr<Client> client, ShipperOptions options)
    : spool_(spool), client_(std::move(client)), options_(std::move(options)) {}

LogShipper::~LogShipper() { stop(); }

void LogShipper::start() { thread_ = std::thread([this] { loop(); }); }

void LogShipper::notify() {
  {
    std::lock_guard lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

void LogShipper::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool LogShipper::drain(std::chrono::steady_clock::time_point deadline) {
  uint64_t target = spool_.size();
  std::unique_lock lock(mu_);
  notified_ = true;
  cv_.notify_all();
  return cv_.wait_until(lock, deadline, [&] { return acked_.load() >= target; });
}

std::chrono::steady_clock::duration LogShipper::out_of_space_for() const {
  std::lock_guard lock(mu_);
  if (full_since_ == std::chrono::steady_clock::time_point{}) return {};
  return std::chrono::steady_clock::now() - full_since_;
}

ShipperStats LogShipper::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void LogShipper::note(const std::string& message) {
  if (options_.log) options_.log(message);
}

void LogShipper::loop() {
  std::string chunk;
  auto backoff = options_.min_backoff;
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || notified_ || acked_.load() < spool_.size(); });
      if (stop_) return;
      notified_ = false;
    }
    if (acked_.load() >= spool_.size()) continue;
    if (ship_once(chunk)) {
      backoff = options_.min_backoff;
      cv_.notify_all();  // drain() waits on the same condition variable
      continue;
    }
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, backoff, [&] { return stop_; })) return;
    backoff = std::min(options_.max_backoff, backoff * 2);
  }
}

bool LogShipper::ship_once(std::string& chunk) {
  uint64_t offset = acked_.load();
  spool_.read(offset, options_.max_chunk, chunk);
  if (chunk.empty()) return true;
  // Only whole lines travel (the spool holds only whole lines, but a chunk may end mid-line).
  size_t nl = chunk.rfind('\n');
  if (nl != std::string::npos) chunk.resize(nl + 1);
  HttpResponse r = client_->send("POST", options_.path + "?offset=" + std::to_string(offset), chunk,
                                 "application/octet-stream", options_.request_timeout_ms);
  std::lock_guard lock(mu_);
  stats_.requests++;
  if (r.status != 507) full_since_ = {};
  else if (full_since_ == std::chrono::steady_clock::time_point{}) full_since_ = std::chrono::steady_clock::now();
  if (r.ok()) {
    if (failing_) {
      failing_ = false;
      uint64_t behind = spool_.size() - offset;
      note("log shipping resumed; " + std::to_string(behind) + " bytes to catch up");
    }
    acked_.store(offset + chunk.size());
    return true;
  }
  auto body = nlohmann::json::parse(r.body, nullptr, false);
  if (r.status == 409 && is_log_gap(body) && body.contains("size") &&
      body["size"].is_number_unsigned()) {
    uint64_t server_size = body["size"].get<uint64_t>();
    stats_.gaps++;
    if (server_size > spool_.size()) {
      {
        note("the workspace holds more log (" + std::to_string(server_size) + " bytes) than this node wrote (" +
                     std::to_string(spool_.size()) + "); not shipping further");
      }
      acked_.store(spool_.size());
      return true;
    }
    acked_.store(server_size);
    return true;
  }
  stats_.failures++;
  if (!failing_) {
    failing_ = true;
    {
      note("cannot ship logs to the workspace (" + describe(r) + "); spooling to " + spool_.path() +
                   " and retrying");
    }
  }
  return false;
}

}  // namespace air::launcher
