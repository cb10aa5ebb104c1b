// A Hugging Face hub client: resolves `org/name[@revision]` for models and datasets through the hub's HTTP
// API, downloads the files a caller selects into huggingface_hub's cache layout (so a cache filled by the
// Python tools is used as it is, and ours by them), and works offline from that cache. Library air_hub;
// it depends on nothing else of ours (libcurl, OpenSSL, nlohmann_json).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace air::hub {

// Every failure a user can act on: one line, plus a hint. Never carries the token.
class HubError : public std::runtime_error {
 public:
  HubError(const std::string& message, std::string hint = {}) : std::runtime_error(message), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

enum class RepoType { kModel, kDataset };

struct Repo {
  RepoType type = RepoType::kModel;
  std::string id;                 // org/name
  std::string revision = "main";  // a branch, a tag or a commit
  std::string kind() const { return type == RepoType::kModel ? "model" : "dataset"; }
  // models--org--name / datasets--org--name: the folder under the cache.
  std::string folder_name() const;
};

// "org/name" or "org/name@revision". Throws HubError when it is not a repo id.
Repo parse_repo(const std::string& name, RepoType type);
// True for strings shaped like a hub repo id (one '/', no leading '/', '.', '~').
bool looks_like_repo_id(const std::string& name);

struct Options {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT
  std::string token;                                 // HF_TOKEN, else the token file under HF_HOME
  std::string cache_dir;                             // HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
  bool offline = false;                              // HF_HUB_OFFLINE=1: never a request
  int retries = 5;                                   // per request, after the first attempt
  int backoff_ms = 500;                              // doubled after each failed attempt, capped at 8 s
  int parallel = 4;                                  // files downloaded at once
  std::ostream* log = nullptr;                       // progress and notes; nothing when null
};

// Reads HF_ENDPOINT, HF_TOKEN / HF_HOME/token (HF_TOKEN_PATH), HF_HUB_CACHE / HF_HOME, HF_HUB_OFFLINE.
Options options_from_env();

struct Snapshot {
  std::string dir;       // <cache>/<folder>/snapshots/<commit>
  std::string commit;
  std::string revision;
  std::vector<std::string> files;  // relative paths in dir, sorted
  bool from_cache = true;          // false when this call made requests
  int files_downloaded = 0;
  uint64_t bytes_downloaded = 0;
};

using FileFilter = std::function<bool(const std::string& path)>;
// Picks files from a repo's whole listing (for choices that depend on what else is there, like a split).
using FileSelector = std::function<std::vector<std::string>(const std::vector<std::string>& all)>;
FileSelector select_by(FileFilter filter);

// The cached snapshot of the revision (refs/<revision>, or the commit itself) and its files that pass the
// filter, or nothing. Makes no request.
std::optional<Snapshot> find_cached(const Repo& repo, const FileSelector& select, const Options& options);
inline std::optional<Snapshot> find_cached(const Repo& repo, const FileFilter& filter, const Options& options) {
  return find_cached(repo, select_by(filter), options);
}

// Resolves the revision, downloads the files that pass the filter (and are not cached yet) into the blobs,
// then links them into snapshots/<commit> and writes refs/<revision>. Processes sharing a cache download
// each file once: they take a lock per repo and per blob and reuse what the first one wrote. With
// options.offline this is find_cached or an error.
Snapshot download_snapshot(const Repo& repo, const FileSelector& select, const Options& options);
inline Snapshot download_snapshot(const Repo& repo, const FileFilter& filter, const Options& options) {
  return download_snapshot(repo, select_by(filter), options);
}

// The files training needs: config.json, generation_config.json, *.safetensors (+ index), tokenizer.json,
// tokenizer_config.json, special_tokens_map.json.
bool is_model_training_file(const std::string& path);
// The files of a dataset split as the datasets library names them: data/<split>-*.parquet (and
// <split>/..., <split>.jsonl, <split>.json, *-<split>.*), else every .parquet/.jsonl/.json data file.
FileFilter dataset_split_filter(const std::vector<std::string>& all_files, const std::string& split);

}  // namespace air::hub
