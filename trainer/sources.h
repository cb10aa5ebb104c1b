// Resolves model_name and dataset_name to local files: a path as given; else a hub name (org/name[@rev])
// found complete in the Hugging Face hub cache ($HF_HUB_CACHE, else $HF_HOME/hub, else
// ~/.cache/huggingface/hub); else downloaded into that cache from HF_ENDPOINT with HF_TOKEN (air_hub).
// Processes sharing a cache download once (a lock); HF_HUB_OFFLINE=1 uses the cache alone.
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace air::train {

struct Source {
  std::string path;                // the model folder, or the dataset's folder / file
  std::vector<std::string> files;  // datasets: the record files to read, sorted
  std::string origin;              // for the run log: where it came from (local path, hub cache, hub download)
};

std::string hf_hub_cache_dir();
// A folder with config.json. `log` receives download progress. Throws an air::Error with a hint.
Source resolve_model(const std::string& model_name, std::ostream* log = nullptr);
// The model's tokenizer files only (tokenizer.json, tokenizer_config.json, chat_template.jinja,
// special_tokens_map.json, config.json): no weights are downloaded (--preview-data).
Source resolve_tokenizer_files(const std::string& model_name, std::ostream* log = nullptr);
// The .json / .jsonl / .parquet files of a dataset (one file, every such file in a folder, or a hub
// dataset's files of `split`, named as the datasets library names them).
Source resolve_dataset(const std::string& dataset_name, const std::string& split = "train", std::ostream* log = nullptr);

inline std::string resolve_model_dir(const std::string& name) { return resolve_model(name).path; }
inline std::vector<std::string> resolve_dataset_files(const std::string& name) { return resolve_dataset(name).files; }

}  // namespace air::train
