// write_snapshot_archive: a deterministic tar (snapshot/tar.h), compressed with zstd on every core the
// process may use, hashed with SHA-256 while it streams to disk. Three stages overlap:
//   reader thread    opens, checks and reads the files in path order into 2 MiB pieces of the tar
//                    stream (headers, content, padding);
//   compressors      one thread per CPU of sched_getaffinity; each piece becomes one zstd frame (level 1);
//   this thread      hashes and writes the frames in order.
// A zstd stream may hold any number of frames one after the other (zstd's format; libarchive, the zstd
// CLI and older air versions read them as one stream). The pieces are cut at fixed offsets of the tar
// stream, so the bytes and the digest are the same on any number of cores (the tests compare 1, 2 and 8).
// Debian's static libzstd is built without its own worker threads (ZSTD_c_nbWorkers is refused), hence
// the threads here; independent frames also skip the multi-threaded mode's overlap reloading, which was
// ~25% of its CPU time (docs/performance.md, "The cold snapshot").
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/base/fd.h"
#include "core/base/sha256.h"
#include "core/snapshot/snapshot.h"
#include "core/snapshot/tar.h"

namespace air {
namespace {

// Level 1 in 2 MiB frames: the snapshot is written on every submit and usually uploaded over a fast
// network. 1, 2 and 8 MiB frames cost the same CPU on the bench's tree (2 MiB: +0.1% bytes against 8);
// small ones keep every core busy on small trees and bound the buffers (4 MiB per piece in flight).
// Changing either changes every digest: bump kFormatTag in cache.cc with them.
constexpr int kLevel = 1;
constexpr size_t kPieceBytes = 2 << 20;
// More compressors than this buy little for one archive; each costs 2 pieces (8 MiB) and a context.
constexpr int kMaxThreads = 16;

Error changed_error(const SnapshotFile& f) {
  return Error("'" + f.path + "' changed while the snapshot was being written",
               "run the command again once the file stops changing, or exclude it in .airignore");
}

// A piece of the tar stream (kPieceBytes, the last one shorter) and its zstd frame.
// The buffers are left uninitialised: a small tree touches (and page-faults) only what it fills, where
// zeroed vectors cost ~24 MiB of page faults on every cold snapshot, however small.
struct Buffer {
  explicit Buffer(size_t n) : data_(new char[n]), size_(n) {}
  char* data() { return data_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_;
};

struct Piece {
  Buffer in{kPieceBytes};
  Buffer out{ZSTD_compressBound(kPieceBytes)};
  size_t used = 0;
  size_t out_size = 0;
  uint64_t seq = 0;
  uint64_t content_done = 0;  // file bytes up to the end of this piece (for the progress callback)
  bool last = false;
};

// The pieces in flight: free -> (reader) -> to compress -> (compressors) -> compressed -> (writer) -> free.
// One lock for all; it is taken a few times per 2 MiB.
class Pipeline {
 public:
  explicit Pipeline(size_t pieces) {
    for (size_t i = 0; i < pieces; ++i) free_.push_back(std::make_unique<Piece>());
  }

  // Each returns nullptr once the pipeline is stopped; take_done rethrows a stage's error once the pieces
  // before it are written.
  std::unique_ptr<Piece> take_free() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stopped_ || !free_.empty(); });
    return stopped_ ? nullptr : pop(free_);
  }
  std::unique_ptr<Piece> take_filled() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stopped_ || !filled_.empty() || input_ended_; });
    return stopped_ || filled_.empty() ? nullptr : pop(filled_);
  }
  std::unique_ptr<Piece> take_done(uint64_t seq) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stopped_ || done_.count(seq) || error_; });
    if (stopped_) return nullptr;
    auto it = done_.find(seq);
    if (it == done_.end()) std::rethrow_exception(error_);
    std::unique_ptr<Piece> p = std::move(it->second);
    done_.erase(it);
    return p;
  }
  void give_free(std::unique_ptr<Piece> p) { give([&] { free_.push_back(std::move(p)); }); }
  void give_filled(std::unique_ptr<Piece> p) { give([&] { filled_.push_back(std::move(p)); }); }
  void give_done(std::unique_ptr<Piece> p) { give([&] { done_[p->seq] = std::move(p); }); }
  void end_input() { give([&] { input_ended_ = true; }); }
  void fail(std::exception_ptr e) {
    give([&] {
      if (!error_) error_ = e;
    });
  }
  void stop() { give([&] { stopped_ = true; }); }

 private:
  template <typename F>
  void give(F change) {
    std::lock_guard<std::mutex> lock(mu_);
    change();
    cv_.notify_all();
  }
  static std::unique_ptr<Piece> pop(std::deque<std::unique_ptr<Piece>>& q) {
    std::unique_ptr<Piece> p = std::move(q.front());
    q.pop_front();
    return p;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Piece>> free_, filled_;
  std::map<uint64_t, std::unique_ptr<Piece>> done_;
  std::exception_ptr error_;
  bool input_ended_ = false;
  bool stopped_ = false;
};

// Writes the tar stream of m into pieces, in order. Runs on its own thread; returns early when stopped.
class TarReader {
 public:
  TarReader(const SnapshotManifest& m, int root_fd, Pipeline& p) : m_(m), root_fd_(root_fd), p_(p) {}

  void run() {
    try {
      next_piece();
      std::string header;
      for (const SnapshotFile& f : m_.files) {
        if (!cur_) return;
        header.clear();
        append_tar_header(header, f);
        put(header.data(), header.size());
        if (!f.symlink) read_content(f);
      }
      zeros(kTarTrailer);
      if (!cur_) return;
      cur_->last = true;
      cur_->content_done = done_;
      p_.give_filled(std::move(cur_));
    } catch (...) {
      p_.fail(std::current_exception());
    }
    p_.end_input();
  }

 private:
  void next_piece() {
    cur_ = p_.take_free();
    if (!cur_) return;
    cur_->used = 0;
    cur_->seq = seq_++;
    cur_->last = false;
  }

  // Room left in the current piece, handing it on when full (0 and cur_ null once stopped).
  size_t room() {
    if (cur_ && cur_->used == cur_->in.size()) {
      cur_->content_done = done_;
      p_.give_filled(std::move(cur_));
      next_piece();
    }
    return cur_ ? cur_->in.size() - cur_->used : 0;
  }

  void put(const char* data, size_t n) {
    while (n > 0) {
      size_t k = std::min(n, room());
      if (k == 0) return;
      std::memcpy(cur_->in.data() + cur_->used, data, k);
      cur_->used += k;
      data += k;
      n -= k;
    }
  }

  void zeros(size_t n) {
    while (n > 0) {
      size_t k = std::min(n, room());
      if (k == 0) return;
      std::memset(cur_->in.data() + cur_->used, 0, k);
      cur_->used += k;
      n -= k;
    }
  }

  // The file's bytes, read straight into the pieces; it must still be the file the scan saw.
  void read_content(const SnapshotFile& f) {
    UniqueFd fd(::openat(root_fd_, f.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0) throw Error("cannot read '" + f.path + "': " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != f.size)
      throw changed_error(f);
    if (f.size > kPieceBytes) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    uint64_t left = f.size;
    while (left > 0) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(left, room()));
      if (k == 0) return;
      ssize_t n = ::read(fd.get(), cur_->in.data() + cur_->used, k);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error("cannot read '" + f.path + "': " + std::strerror(errno));
      if (n == 0) throw changed_error(f);  // shrank after the scan: the header already promised f.size
      cur_->used += static_cast<size_t>(n);
      left -= static_cast<uint64_t>(n);
      done_ += static_cast<uint64_t>(n);
    }
    zeros(tar_padding(f.size));
  }

  const SnapshotManifest& m_;
  int root_fd_;
  Pipeline& p_;
  std::unique_ptr<Piece> cur_;
  uint64_t seq_ = 0;
  uint64_t done_ = 0;
};

// One compressor thread: pieces in, frames out, until the reader is done or the pipeline stops.
void compress_pieces(Pipeline& p) {
  try {
    std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
    if (!cctx) throw Error("zstd: out of memory");
    while (std::unique_ptr<Piece> piece = p.take_filled()) {
      size_t n = ZSTD_compressCCtx(cctx.get(), piece->out.data(), piece->out.size(), piece->in.data(), piece->used,
                                   kLevel);
      if (ZSTD_isError(n)) throw Error(std::string("zstd: cannot compress: ") + ZSTD_getErrorName(n));
      piece->out_size = n;
      p.give_done(std::move(piece));
    }
  } catch (...) {
    p.fail(std::current_exception());
  }
}

// Where the compressed bytes go: the file, and the hash of exactly those bytes.
struct Sink {
  int fd = -1;
  std::string path;
  Sha256 hash;
  uint64_t bytes = 0;
  // The file's blocks are reserved 32 MiB ahead of the writes (fallocate): ext4's delayed allocation
  // otherwise reserves block by block inside every write(), ~30% of the writes' CPU (463 MB: 0.115 s of
  // system time against 0.078 s; docs/performance.md). Where the file system cannot (or the disk is too
  // full for 32 MiB at once) the writes go on without it. finish() cuts the file to what was written.
  uint64_t reserved = 0;
  bool reserve = true;
  bool resized = false;  // a reservation was asked for (a failed one may still have grown the file)

  // In 128 KiB slices, each hashed and then written while it is in the core's cache: one 8 MiB write()
  // cost 7x the CPU of the same bytes in 128 KiB writes (the kernel's copy into the page cache read the
  // frame from memory; docs/performance.md, "The cold snapshot").
  void write(const char* data, size_t n) {
    constexpr size_t kSlice = 128 << 10;
    constexpr uint64_t kReserveAhead = 32 << 20;
    if (reserve && bytes + n > reserved) {
      uint64_t want = bytes + n + kReserveAhead;
      resized = true;
      if (::fallocate(fd, 0, static_cast<off_t>(reserved), static_cast<off_t>(want - reserved)) == 0)
        reserved = want;
      else
        reserve = false;
    }
    bytes += n;
    while (n > 0) {
      size_t k = std::min(n, kSlice);
      hash.update(data, k);
      write_all(data, k);
      data += k;
      n -= k;
    }
  }

  // The file's size back to the bytes written (the last reservation went past them).
  void finish() {
    if (resized && ::ftruncate(fd, static_cast<off_t>(bytes)) != 0)
      throw Error("cannot write the snapshot archive '" + path + "': " + std::strerror(errno));
  }

  void write_all(const char* data, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd, data, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        int err = errno;
        throw Error("cannot write the snapshot archive '" + path + "': " + std::strerror(err),
                    err == ENOSPC ? "free disk space where the snapshot cache is ($AIR_HOME)" : "");
      }
      data += w;
      n -= static_cast<size_t>(w);
    }
  }
};

// Writes the frames in order; reports progress after each.
void write_frames(Pipeline& p, Sink& sink, uint64_t total, const SnapshotProgress& progress) {
  uint64_t reported = 0;
  for (uint64_t seq = 0;; ++seq) {
    std::unique_ptr<Piece> piece = p.take_done(seq);
    if (!piece) return;
    sink.write(piece->out.data(), piece->out_size);
    bool last = piece->last;
    uint64_t done = piece->content_done;
    p.give_free(std::move(piece));
    if (progress && done - reported >= (8u << 20)) {
      reported = done;
      progress(done, total);
    }
    if (last) return;
  }
}

std::string temp_name_for(const std::string& out_path) {
  std::random_device rd;
  return out_path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
}

// Runs the three stages to the end; any stage's error stops the others and is rethrown here.
void run_pipeline(const SnapshotManifest& m, int root_fd, int threads, Sink& sink, const SnapshotProgress& progress) {
  // No more threads and pieces than the tree has pieces (~1.5 KiB of header and padding a file; a guess
  // too low only means fewer threads).
  const uint64_t tar_bound = m.total_bytes + 1536 * static_cast<uint64_t>(m.files.size()) + kTarTrailer;
  const uint64_t pieces_in_tree = tar_bound / kPieceBytes + 1;
  threads = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(threads), pieces_in_tree));
  // Each compressor has one piece in hand, one waits ready for it, and the reader fills the next.
  Pipeline p(static_cast<size_t>(std::min<uint64_t>(2 * static_cast<uint64_t>(threads) + 2, pieces_in_tree + 1)));
  TarReader reader(m, root_fd, p);
  std::vector<std::thread> running;
  auto join = [&] {
    p.stop();
    for (auto& t : running) t.join();
  };
  try {
    running.emplace_back([&] { reader.run(); });
    for (int i = 0; i < threads; ++i) running.emplace_back([&] { compress_pieces(p); });
    write_frames(p, sink, m.total_bytes, progress);
  } catch (...) {
    join();
    throw;
  }
  join();
}

}  // namespace

int snapshot_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int n = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(n, 1, kMaxThreads);
}

SnapshotArchive write_snapshot_archive(const SnapshotManifest& m, const std::string& out_path) {
  return write_snapshot_archive(m, out_path, SnapshotProgress{});
}

SnapshotArchive write_snapshot_archive(const SnapshotManifest& m, const std::string& out_path,
                                       const SnapshotProgress& progress) {
  return write_snapshot_archive(m, out_path, progress, 0);
}

SnapshotArchive write_snapshot_archive(const SnapshotManifest& m, const std::string& out_path,
                                       const SnapshotProgress& progress, int threads) {
  if (threads <= 0) threads = snapshot_threads();
  threads = std::min(threads, kMaxThreads);
  UniqueFd root(::open(m.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) throw Error("cannot read snapshot root '" + m.root + "': " + std::strerror(errno));

  Sink sink;
  sink.path = out_path;
  std::string tmp = temp_name_for(out_path);
  sink.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (sink.fd < 0) throw Error("cannot create '" + tmp + "': " + std::strerror(errno));
  try {
    run_pipeline(m, root.get(), threads, sink, progress);
    sink.finish();
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
