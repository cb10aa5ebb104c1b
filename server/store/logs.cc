// File-backed log store with offset-idempotent appends and long-poll reads.
#include "server/store/logs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/base/error.h"

namespace air::server {

namespace fs = std::filesystem;

std::string LogStore::path(const LogKey& k) const {
  return runs_dir_ + "/" + k.run_id + "/attempt_" + std::to_string(k.attempt) + "/node_" +
         std::to_string(k.node) + ".log";
}

LogStore::Entry& LogStore::entry(const LogKey& k) {
  std::unique_ptr<Entry>* slot;
  {
    std::lock_guard<std::mutex> g(mu_);
    slot = &entries_[k];
    if (!*slot) *slot = std::make_unique<Entry>();
  }
  Entry& e = **slot;
  std::lock_guard<std::mutex> g(e.mu);
  if (!e.loaded) {
    struct stat st {};
    e.size = ::stat(path(k).c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    e.loaded = true;
  }
  return e;
}


AppendResult LogStore::append(const LogKey& k, uint64_t offset, std::string_view data) {
  Entry& e = entry(k);
  {
    std::lock_guard<std::mutex> g(e.mu);
    if (offset > e.size) return {true, e.size};
    uint64_t skip = e.size - offset;
    if (skip >= data.size()) return {false, e.size};
    data.remove_prefix(skip);
    if (!leaves_disk_reserve(runs_dir_, data.size()))
      throw LogWriteError("cannot write log " + path(k) + ": " + std::strerror(ENOSPC) +
                              " (the last free space is kept for the workspace's database)",
                          ENOSPC);
    int fd = append_fd(k, e);
    size_t done = 0;
    while (done < data.size()) {
      ssize_t w = ::write(fd, data.data() + done, data.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : ENOSPC;
        // Keep the size equal to the file's length so that the agent's retry resumes exactly here.
        struct stat st {};
        if (::fstat(fd, &st) == 0) e.size = static_cast<uint64_t>(st.st_size);
        close_fd(e);
        throw LogWriteError("cannot write log " + path(k) + ": " + std::strerror(err), err);
      }
      done += static_cast<size_t>(w);
    }
    e.size += data.size();
    e.pacer.wrote(fd, e.size);
  }
  wake();
  return {false, e.size};
}

LogStore::~LogStore() {
  for (Entry* e : open_) ::close(e->fd);
}

int LogStore::append_fd(const LogKey& k, Entry& e) {
  if (e.fd < 0) {
    std::string p = path(k);
    std::error_code ec;
    fs::create_directories(fs::path(p).parent_path(), ec);
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw Error("cannot write log " + p + ": " + std::strerror(errno));
    e.fd = fd;
    e.pacer.reset(e.size);
    std::lock_guard<std::mutex> g(fds_mu_);
    open_.push_back(&e);
  }
  {
    std::lock_guard<std::mutex> g(fds_mu_);
    e.last_use = ++use_clock_;
  }
  limit_open(&e);
  return e.fd;
}

void LogStore::close_fd(Entry& e) {
  if (e.fd < 0) return;
  ::close(e.fd);
  e.fd = -1;
  std::lock_guard<std::mutex> g(fds_mu_);
  open_.erase(std::remove(open_.begin(), open_.end(), &e), open_.end());
}

void LogStore::limit_open(Entry* keep) {
  std::lock_guard<std::mutex> g(fds_mu_);
  while (open_.size() > kMaxOpen) {
    // The least recently used log whose lock is free now (try_lock: the caller holds keep's lock, and a
    // writer holding another entry's lock may be waiting for fds_mu_).
    std::vector<Entry*> by_age(open_);
    std::sort(by_age.begin(), by_age.end(), [](Entry* a, Entry* b) { return a->last_use < b->last_use; });
    Entry* victim = nullptr;
    for (Entry* e : by_age) {
      if (e == keep || !e->mu.try_lock()) continue;
      victim = e;
      break;
    }
    if (!victim) return;
    ::close(victim->fd);
    victim->fd = -1;
    victim->mu.unlock();
    open_.erase(std::remove(open_.begin(), open_.end(), victim), open_.end());
  }
}

uint64_t LogStore::size(const LogKey& k) {
  Entry& e = entry(k);
  std::lock_guard<std::mutex> g(e.mu);
  return e.size;
}

void LogStore::wake() {
  std::function<void()> listener;
  {
    std::lock_guard<std::mutex> g(mu_);
    listener = listener_;
  }
  if (listener) listener();
}

void LogStore::set_listener(std::function<void()> f) {
  std::lock_guard<std::mutex> g(mu_);
  listener_ = std::move(f);
}

LogChunk LogStore::read(const LogKey& k, uint64_t offset, uint64_t max_bytes) {
  LogChunk c;
  c.offset = offset;
  c.size = size(k);
  if (c.size <= offset) return c;
  uint64_t n = std::min<uint64_t>(c.size - offset, max_bytes);
  c.data.resize(n);
  int fd = ::open(path(k).c_str(), O_RDONLY);
  if (fd < 0) throw Error("cannot read log " + path(k));
  ssize_t got = ::pread(fd, c.data.data(), n, static_cast<off_t>(offset));
  ::close(fd);
  c.data.resize(got > 0 ? static_cast<size_t>(got) : 0);
  if (offset + c.data.size() < c.size) {
    auto nl = c.data.rfind('\n');
    if (nl != std::string::npos) c.data.resize(nl + 1);
  }
  return c;
}

uint64_t LogStore::tail_offset(const LogKey& k, uint64_t lines) {
  uint64_t sz = size(k);
  if (lines == 0) return sz;
  int fd = ::open(path(k).c_str(), O_RDONLY);
  if (fd < 0) return 0;
  uint64_t pos = sz, found = 0;
  std::vector<char> buf(64 * 1024);
  bool first = true;
  while (pos > 0) {
    uint64_t n = std::min<uint64_t>(pos, buf.size());
    pos -= n;
    if (::pread(fd, buf.data(), n, static_cast<off_t>(pos)) != static_cast<ssize_t>(n)) break;
    for (uint64_t i = n; i-- > 0;) {
      if (buf[i] != '\n') continue;
      if (first && pos + i == sz - 1) continue;  // the final newline ends the last line
      if (++found == lines) {
        ::close(fd);
        return pos + i + 1;
      }
    }
    first = false;
  }
  ::close(fd);
  return 0;
}

}  // namespace air::server
