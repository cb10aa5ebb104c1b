// Model and dataset name resolution: local paths first, then the Hugging Face hub cache layout
// (<cache>/models--org--name/snapshots/<revision>/, the revision read from refs/main).
#include "trainer/sources.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

bool is_data_file(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".json" || e == ".jsonl";
}

// The snapshot folder of repo `kind` ("models" / "datasets") `name` in the hub cache, or "".
std::string hub_snapshot(const std::string& kind, const std::string& name, std::string& looked) {
  std::string flat = name;
  for (size_t p = 0; (p = flat.find('/', p)) != std::string::npos; p += 2) flat.replace(p, 1, "--");
  fs::path repo = fs::path(hf_hub_cache_dir()) / (kind + "--" + flat);
  looked = repo.string();
  fs::path snaps = repo / "snapshots";
  std::error_code ec;
  if (!fs::is_directory(snaps, ec)) return "";
  std::ifstream ref(repo / "refs" / "main");
  std::string rev;
  if (ref && std::getline(ref, rev) && fs::is_directory(snaps / rev, ec)) return (snaps / rev).string();
  std::vector<fs::path> all;
  for (const auto& e : fs::directory_iterator(snaps, ec))
    if (e.is_directory()) all.push_back(e.path());
  if (all.empty()) return "";
  std::sort(all.begin(), all.end());
  return all.back().string();
}

}  // namespace

std::string hf_hub_cache_dir() {
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HF_HOME"); h && *h) return (fs::path(h) / "hub").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home ? home : "/root") / ".cache" / "huggingface" / "hub").string();
}

std::string resolve_model_dir(const std::string& name) {
  std::error_code ec;
  if (fs::is_directory(name, ec)) {
    if (!fs::exists(fs::path(name) / "config.json"))
      throw Error("model folder " + name + " has no config.json",
                  "a model folder holds config.json, the *.safetensors weights and tokenizer.json");
    return name;
  }
  std::string looked;
  std::string snap = name.find('/') != std::string::npos && name.front() != '/' && name.front() != '.'
                         ? hub_snapshot("models", name, looked)
                         : "";
  if (!snap.empty() && fs::exists(fs::path(snap) / "config.json")) return snap;
  std::string where = "'" + name + "' is not a folder";
  if (!looked.empty()) where += ", and the hub cache has no snapshot at " + looked;
  throw Error("model " + name + " not found: " + where,
              "air-train does not download; put the model in the HF_HOME cache (e.g. with "
              "`huggingface-cli download " + name + "`) or set model_name to a local folder");
}

std::vector<std::string> resolve_dataset_files(const std::string& name) {
  std::error_code ec;
  if (fs::is_regular_file(name, ec)) {
    if (!is_data_file(name))
      throw Error("dataset " + name + " is not a .json or .jsonl file", "convert it to JSON Lines (one record per line)");
    return {name};
  }
  std::string dir, looked;
  if (fs::is_directory(name, ec)) dir = name;
  else if (name.find('/') != std::string::npos && name.front() != '/' && name.front() != '.')
    dir = hub_snapshot("datasets", name, looked);
  if (dir.empty()) {
    std::string where = "'" + name + "' is not a file or folder";
    if (!looked.empty()) where += ", and the hub cache has no snapshot at " + looked;
    throw Error("dataset " + name + " not found: " + where,
                "air-train does not download; set dataset_name to a local .json/.jsonl file or folder");
  }
  std::vector<std::string> files;
  bool parquet = false;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file(ec)) continue;
    const fs::path& p = it->path();
    if (p.extension() == ".parquet") parquet = true;
    if (is_data_file(p) && p.filename().string().rfind("dataset_info", 0) != 0) files.push_back(p.string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw Error("dataset " + name + ": no .json or .jsonl files in " + dir,
                parquet ? "it holds Parquet files, which air-train does not read: convert them to JSON Lines"
                        : "put Alpaca-format records (instruction, input, output) in a .json or .jsonl file");
  return files;
}

}  // namespace air::train
