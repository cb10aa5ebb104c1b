// Resolves model_name and dataset_name to local files: a path as given, or a name in the Hugging Face hub
// cache layout ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub). Nothing is downloaded.
#pragma once
#include <string>
#include <vector>

namespace air::train {

std::string hf_hub_cache_dir();
// A folder with config.json. Throws an air::Error that says every place it looked.
std::string resolve_model_dir(const std::string& model_name);
// The .json / .jsonl files of a dataset (one file, or every such file in a folder or hub snapshot).
std::vector<std::string> resolve_dataset_files(const std::string& dataset_name);

}  // namespace air::train
