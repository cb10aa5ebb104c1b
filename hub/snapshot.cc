// A repo snapshot: the revision resolved to a commit (GET /api/{models,datasets}/{id}/revision/{rev}),
// its file list filtered, each file fetched into the blobs (several at once), then linked into
// snapshots/<commit>/ and refs/<revision> written last, so an interrupted run leaves no half snapshot.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "hub/internal.h"

namespace air::hub {
namespace fs = std::filesystem;
namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

// Prints "hub: <repo>: 3/5 files, 1.2 GB/16.0 GB, 850 MB/s" every second on a terminal (one line, \r),
// every 10 s otherwise (plain lines), until stopped.
class Progress {
 public:
  Progress(const Options& o, std::string name, int files, uint64_t total)
      : o_(o), name_(std::move(name)), files_(files), total_(total), tty_(isatty(STDOUT_FILENO) && o.log) {
    if (o_.log) thread_ = std::thread([this] { run(); });
  }
  ~Progress() { stop(); }
  void stop() {
    {
      std::lock_guard<std::mutex> l(m_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (tty_) log_text(o_, "\n");
  }
  std::atomic<uint64_t> bytes{0};
  std::atomic<int> done{0};

 private:
  void run() {
    auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> l(m_);
    while (!cv_.wait_for(l, std::chrono::seconds(tty_ ? 1 : 10), [this] { return stopped_; })) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      log_text(o_, std::string(tty_ ? "\r" : "") + "hub: " + name_ + ": " + std::to_string(done) + "/" + std::to_string(files_) +
                       " files, " + human_bytes(bytes) + " of " + human_bytes(total_) + ", " + human_bytes(bytes / std::max(s, 1e-3)) +
                       "/s" + (tty_ ? "   " : "\n"));
    }
  }
  const Options& o_;
  std::string name_;
  int files_;
  uint64_t total_;
  bool tty_;
  bool stopped_ = false;
  std::mutex m_;
  std::condition_variable cv_;
  std::thread thread_;
};

std::vector<std::string> list_snapshot(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code fe;
    if (fs::is_regular_file(it->path(), fe))  // follows the link: a dangling one is not a file
      out.push_back(it->path().lexically_relative(dir).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct RepoInfo {
  std::string commit;
  std::vector<std::string> files;
};

RepoInfo repo_info(const Repo& repo, const Options& o) {
  std::string url = o.endpoint + "/api/" + (repo.type == RepoType::kModel ? "models/" : "datasets/") + repo.id + "/revision/" +
                    url_escape(repo.revision, false);
  HttpResponse r = call_with_retries({"GET", url, o.token, -1, {}}, o, "resolving " + repo.kind() + " " + repo.id);
  if (r.status != 200) raise_for_status(r, repo, "", o);
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("sha") || !j["sha"].is_string())
    throw HubError("the hub's answer for " + repo.kind() + " " + repo.id + " is not the expected JSON", "check HF_ENDPOINT (" + o.endpoint + ")");
  RepoInfo info{j["sha"].get<std::string>(), {}};
  if (!is_commit_hash(info.commit)) throw HubError("the hub gave an invalid commit for " + repo.id + ": " + info.commit);
  if (j.contains("siblings") && j["siblings"].is_array())
    for (const auto& s : j["siblings"])
      if (s.is_object() && s.contains("rfilename") && s["rfilename"].is_string()) {
        std::string f = s["rfilename"].get<std::string>();
        if (f.empty() || f[0] == '/' || f.find("..") != std::string::npos) continue;  // never a path outside the snapshot
        info.files.push_back(f);
      }
  return info;
}

}  // namespace

FileSelector select_by(FileFilter filter) {
  return [filter = std::move(filter)](const std::vector<std::string>& all) {
    std::vector<std::string> out;
    for (const auto& f : all)
      if (!filter || filter(f)) out.push_back(f);
    return out;
  };
}

std::optional<Snapshot> find_cached(const Repo& repo, const FileSelector& select, const Options& o) {
  CacheRepo cache = cache_repo(o.cache_dir, repo.folder_name());
  std::string commit = read_ref(cache, repo.revision);
  if (commit.empty()) return std::nullopt;
  std::string dir = snapshot_dir(cache, commit);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  Snapshot s{dir, commit, repo.revision, {}, true, 0, 0};
  s.files = select(list_snapshot(dir));
  if (s.files.empty()) return std::nullopt;
  return s;
}

Snapshot download_snapshot(const Repo& repo, const FileSelector& select, const Options& o) {
  if (o.offline) {
    if (auto s = find_cached(repo, select, o)) return *s;
    throw HubError("HF_HUB_OFFLINE is set and " + repo.kind() + " " + repo.id + "@" + repo.revision + " is not in the hub cache (" +
                       (fs::path(o.cache_dir) / repo.folder_name()).string() + ")",
                   "unset HF_HUB_OFFLINE to download it, or fill the cache first (e.g. `huggingface-cli download " +
                       std::string(repo.type == RepoType::kDataset ? "--repo-type dataset " : "") + repo.id + "`)");
  }
  CacheRepo cache = cache_repo(o.cache_dir, repo.folder_name());
  // One process per cache downloads a repo at a time; the others wait here and then find the blobs there.
  FileLock lock((fs::path(cache.locks) / "air-snapshot.lock").string(), [&] {
    log_text(o, "hub: waiting for another process downloading " + repo.id + "\n");
  });
  RepoInfo info;
  try {
    info = repo_info(repo, o);
  } catch (const HubError& e) {
    // Like huggingface_hub: an unreachable hub with the revision cached is a warning, not a failure.
    auto cached = std::string(e.what()).rfind("network error", 0) == 0 ? find_cached(repo, select, o) : std::nullopt;
    if (!cached) throw;
    log_text(o, "hub: warning: " + std::string(e.what()) + "; using the cached snapshot " + cached->commit + "\n");
    return *cached;
  }
  std::vector<std::string> wanted = select(info.files);
  if (wanted.empty())
    throw HubError(repo.kind() + " " + repo.id + "@" + repo.revision + " has none of the files needed (it has " + std::to_string(info.files.size()) +
                       " files)", "see " + repo_url(repo, o) + "/tree/" + repo.revision);
  std::vector<FileMeta> metas(wanted.size());
  for (size_t i = 0; i < wanted.size(); ++i) metas[i] = file_metadata(repo, info.commit, wanted[i], o);
  uint64_t total = 0;
  for (const auto& m : metas) total += m.size;
  Snapshot s{snapshot_dir(cache, info.commit), info.commit, repo.revision, wanted, false, 0, 0};
  Progress progress(o, repo.id, static_cast<int>(metas.size()), total);
  std::atomic<size_t> next{0};
  std::atomic<int> fetched{0};
  std::mutex err_mutex;
  std::exception_ptr first_error;
  auto worker = [&] {
    for (size_t i; (i = next++) < metas.size();) {
      try {
        if (fetch_blob(repo, cache, metas[i], o, progress.bytes) > 0 || metas[i].size == 0) ++fetched;
        ++progress.done;
      } catch (...) {
        std::lock_guard<std::mutex> l(err_mutex);
        if (!first_error) first_error = std::current_exception();
        next = metas.size();  // stop taking new files
      }
    }
  };
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, std::min<int>(o.parallel, static_cast<int>(metas.size()))); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  progress.stop();
  if (first_error) std::rethrow_exception(first_error);
  for (const auto& m : metas) link_snapshot_file(cache, info.commit, m.path, m.etag);
  write_ref(cache, repo.revision, info.commit);
  s.files_downloaded = fetched;
  s.bytes_downloaded = progress.bytes;
  if (fetched > 0) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    log_text(o, "hub: " + repo.id + ": fetched " + std::to_string(fetched) + " of " + std::to_string(metas.size()) + " files, " +
                    human_bytes(static_cast<double>(s.bytes_downloaded)) + " in " + std::to_string(secs).substr(0, std::to_string(secs).find('.') + 2) +
                    " s (" + human_bytes(s.bytes_downloaded / std::max(secs, 1e-3)) + "/s)\n");
  }
  std::sort(s.files.begin(), s.files.end());
  return s;
}

}  // namespace air::hub
