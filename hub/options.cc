// Settings from huggingface_hub's environment variables, repo ids, and the training-file filters.
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "hub/hub.h"

namespace air::hub {
namespace fs = std::filesystem;
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool truthy(const std::string& v) { return v == "1" || v == "ON" || v == "on" || v == "true" || v == "TRUE" || v == "yes" || v == "YES"; }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = s.find_first_not_of(" \t");
  return i == std::string::npos ? "" : s.substr(i);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool is_data_file(const std::string& p) {
  std::string base = p.substr(p.rfind('/') + 1);
  if (starts_with(base, "dataset_info") || starts_with(base, ".")) return false;  // metadata, not records
  return ends_with(p, ".parquet") || ends_with(p, ".jsonl") || ends_with(p, ".json");
}

}  // namespace

std::string Repo::folder_name() const {
  std::string flat = id;
  for (size_t p = 0; (p = flat.find('/', p)) != std::string::npos; p += 2) flat.replace(p, 1, "--");
  return (type == RepoType::kModel ? "models--" : "datasets--") + flat;
}

bool looks_like_repo_id(const std::string& name) {
  std::string id = name.substr(0, name.find('@'));
  if (id.empty() || id.front() == '/' || id.front() == '.' || id.front() == '~') return false;
  size_t slash = id.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == id.size() || id.find('/', slash + 1) != std::string::npos) return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/')) return false;
  return id.find("..") == std::string::npos && id.find("--") == std::string::npos;
}

Repo parse_repo(const std::string& name, RepoType type) {
  if (!looks_like_repo_id(name))
    throw HubError("'" + name + "' is not a hub repo id", "a hub name is org/name, optionally with @revision");
  Repo r;
  r.type = type;
  size_t at = name.find('@');
  r.id = name.substr(0, at);
  if (at != std::string::npos) r.revision = name.substr(at + 1);
  if (r.revision.empty() || r.revision.find("..") != std::string::npos)
    throw HubError("'" + name + "' has an empty or invalid revision", "write org/name@main, a tag or a commit");
  return r;
}

Options options_from_env() {
  Options o;
  std::string hf_home = env("HF_HOME");
  if (hf_home.empty()) {
    std::string xdg = env("XDG_CACHE_HOME");
    std::string home = env("HOME").empty() ? "/root" : env("HOME");
    hf_home = ((xdg.empty() ? fs::path(home) / ".cache" : fs::path(xdg)) / "huggingface").string();
  }
  if (std::string e = env("HF_ENDPOINT"); !e.empty()) {
    while (!e.empty() && e.back() == '/') e.pop_back();
    o.endpoint = e;
  }
  o.cache_dir = env("HF_HUB_CACHE");
  if (o.cache_dir.empty()) o.cache_dir = env("HUGGINGFACE_HUB_CACHE");
  if (o.cache_dir.empty()) o.cache_dir = (fs::path(hf_home) / "hub").string();
  o.token = trim(env("HF_TOKEN"));
  if (o.token.empty()) o.token = trim(env("HUGGING_FACE_HUB_TOKEN"));
  if (o.token.empty()) {
    std::string path = env("HF_TOKEN_PATH").empty() ? (fs::path(hf_home) / "token").string() : env("HF_TOKEN_PATH");
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line)) o.token = trim(line);
  }
  o.offline = truthy(env("HF_HUB_OFFLINE"));
  return o;
}

bool is_model_training_file(const std::string& path) {
  static const char* names[] = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                                "special_tokens_map.json", "model.safetensors.index.json", "chat_template.jinja"};
  if (path.find('/') != std::string::npos) return false;  // only the top level: no original/ or onnx/ copies
  for (const char* n : names)
    if (path == n) return true;
  return ends_with(path, ".safetensors");
}

namespace {

// Whether `p` is named as a file of `split` (the datasets library's patterns, most specific first).
int split_pattern(const std::string& p, const std::string& split) {
  if (starts_with(p, "data/" + split + "-") || starts_with(p, "data/" + split + ".")) return 1;
  if (starts_with(p, split + "/") || starts_with(p, "data/" + split + "/")) return 2;
  std::string base = p.substr(p.rfind('/') + 1);
  if (starts_with(base, split + ".") || starts_with(base, split + "-") || base.find("-" + split + ".") != std::string::npos ||
      base.find("_" + split + ".") != std::string::npos || base.find("-" + split + "-") != std::string::npos)
    return 3;
  return 0;
}

}  // namespace

FileFilter dataset_split_filter(const std::vector<std::string>& all_files, const std::string& split) {
  // The datasets library's default patterns for a split, most specific first; the first that matches wins.
  for (int level = 1; level <= 3; ++level) {
    bool any = false;
    for (const auto& f : all_files) any = any || (is_data_file(f) && split_pattern(f, split) == level);
    if (any)
      return [split, level](const std::string& p) { return is_data_file(p) && split_pattern(p, split) == level; };
  }
  // Files named after no split are the train split (a repo with one unnamed file is all train). Never for
  // another split, and never a file named as another split's: the listing may be a partial cache holding
  // only the train files, where "validation" must find nothing (and be downloaded), not the train files.
  if (split != "train") return [](const std::string&) { return false; };
  return [](const std::string& p) {
    if (!is_data_file(p)) return false;
    for (const char* other : {"validation", "valid", "val", "test", "dev", "eval"})
      if (split_pattern(p, other)) return false;
    return true;
  };
}

}  // namespace air::hub
