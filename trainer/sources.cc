// Model and dataset name resolution: local paths first, then the hub cache (no request when the snapshot
// of the revision is there and complete), then a download through air_hub. Hub errors become air::Errors.
#include "trainer/sources.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "hub/hub.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

bool is_data_file(const fs::path& p) {
  const std::string e = p.extension().string();
  const std::string base = p.filename().string();
  return (e == ".json" || e == ".jsonl" || e == ".parquet") && base.rfind("dataset_info", 0) != 0;
}

std::string short_commit(const std::string& c) { return c.substr(0, 12); }

std::string human_mb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// A model snapshot is usable when config.json is there and, with a sharded checkpoint, every shard.
bool model_complete(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(dir) / "config.json", ec)) return false;
  fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (!fs::exists(index, ec)) return true;
  std::ifstream in(index);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object()) return false;
  for (const auto& [_, file] : j["weight_map"].items())
    if (!file.is_string() || !fs::is_regular_file(fs::path(dir) / file.get<std::string>(), ec)) return false;
  return true;
}

std::string describe(const hub::Repo& repo, const hub::Snapshot& s, const hub::Options& o) {
  std::string where = repo.id + "@" + s.revision + ", commit " + short_commit(s.commit);
  if (s.from_cache) return "hub cache (" + where + ") at " + s.dir;
  return "hub download (" + where + ", " + std::to_string(s.files_downloaded) + " of " + std::to_string(s.files.size()) +
         " files fetched, " + human_mb(s.bytes_downloaded) + ") from " + o.endpoint + " into " + s.dir;
}

// Cache first (no request), then the hub; every hub failure as an air::Error with its hint.
template <typename Complete>
hub::Snapshot fetch(const hub::Repo& repo, const hub::FileSelector& filter, const Complete& complete, std::ostream* log) {
  hub::Options o = hub::options_from_env();
  o.log = log;
  try {
    if (auto cached = hub::find_cached(repo, filter, o); cached && complete(*cached)) return *cached;
    hub::Snapshot s = hub::download_snapshot(repo, filter, o);
    if (!complete(s))
      throw Error(repo.kind() + " " + repo.id + "@" + repo.revision + " (commit " + short_commit(s.commit) + ") is incomplete in " + s.dir,
                  o.offline ? "unset HF_HUB_OFFLINE so the missing files are downloaded" : "check the repo's files on the hub");
    return s;
  } catch (const hub::HubError& e) {
    throw Error(e.what(), e.hint());
  }
}

}  // namespace

std::string hf_hub_cache_dir() { return hub::options_from_env().cache_dir; }

Source resolve_model(const std::string& name, std::ostream* log) {
  std::error_code ec;
  if (fs::is_directory(name, ec)) {
    if (!fs::exists(fs::path(name) / "config.json"))
      throw Error("model folder " + name + " has no config.json",
                  "a model folder holds config.json, the *.safetensors weights and tokenizer.json");
    return {name, {}, "local folder " + fs::absolute(name).lexically_normal().string()};
  }
  if (!hub::looks_like_repo_id(name))
    throw Error("model " + name + " not found: it is not a folder, nor a hub name (org/name)",
                "set model_name to a local folder with config.json, or to a hub model such as meta-llama/Llama-3.1-8B");
  hub::Repo repo = hub::parse_repo(name, hub::RepoType::kModel);
  hub::Snapshot s = fetch(repo, hub::select_by(hub::is_model_training_file), [](const hub::Snapshot& s) { return model_complete(s.dir); }, log);
  return {s.dir, s.files, describe(repo, s, hub::options_from_env())};
}

Source resolve_tokenizer_files(const std::string& name, std::ostream* log) {
  std::error_code ec;
  if (fs::is_directory(name, ec) || !hub::looks_like_repo_id(name)) return resolve_model(name, log);
  auto is_tokenizer_file = [](const std::string& path) {
    static const char* kFiles[] = {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                                   "special_tokens_map.json", "config.json"};
    for (const char* f : kFiles)
      if (path == f) return true;
    return false;
  };
  hub::Repo repo = hub::parse_repo(name, hub::RepoType::kModel);
  hub::Snapshot s = fetch(repo, hub::select_by(is_tokenizer_file),
                          [](const hub::Snapshot& s) { return fs::is_regular_file(fs::path(s.dir) / "tokenizer.json"); }, log);
  return {s.dir, s.files, describe(repo, s, hub::options_from_env())};
}

Source resolve_dataset(const std::string& name, const std::string& split, std::ostream* log) {
  std::error_code ec;
  if (fs::is_regular_file(name, ec)) {
    if (!is_data_file(name))
      throw Error("dataset " + name + " is not a .json, .jsonl or .parquet file", "convert it to JSON Lines (one record per line)");
    return {name, {name}, "local file " + fs::absolute(name).lexically_normal().string()};
  }
  Source src;
  if (fs::is_directory(name, ec)) {
    src.path = name;
    src.origin = "local folder " + fs::absolute(name).lexically_normal().string();
    for (auto it = fs::recursive_directory_iterator(name, fs::directory_options::follow_directory_symlink, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file(ec) && is_data_file(it->path())) src.files.push_back(it->path().string());
  } else if (hub::looks_like_repo_id(name)) {
    hub::Repo repo = hub::parse_repo(name, hub::RepoType::kDataset);
    // The split's files are chosen from the whole listing (cached or the hub's), as the datasets library does.
    hub::FileSelector split_files = [&](const std::vector<std::string>& all) {
      return hub::select_by(hub::dataset_split_filter(all, split))(all);
    };
    hub::Snapshot s = fetch(repo, split_files, [](const hub::Snapshot& s) { return !s.files.empty(); }, log);
    src.path = s.dir;
    src.origin = describe(repo, s, hub::options_from_env()) + " (split " + split + ")";
    for (const auto& f : s.files) src.files.push_back((fs::path(s.dir) / f).string());
  } else {
    throw Error("dataset " + name + " not found: it is not a file, a folder, nor a hub name (org/name)",
                "set dataset_name to a local .json/.jsonl/.parquet file or folder, or to a hub dataset such as tatsu-lab/alpaca");
  }
  std::sort(src.files.begin(), src.files.end());
  if (src.files.empty())
    throw Error("dataset " + name + ": no .json, .jsonl or .parquet files of split '" + split + "' in " + src.path,
                "put Alpaca-format records (instruction, input, output) in a .json, .jsonl or .parquet file");
  return src;
}

}  // namespace air::train
