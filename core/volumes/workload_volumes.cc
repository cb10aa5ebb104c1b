// core/volumes/workload_volumes.h
#include "core/volumes/workload_volumes.h"

#include <algorithm>

#include "core/volumes/path.h"
#include "core/workload/workload.h"

namespace air {

std::vector<std::string> workload_volume_keys(const Workload& w) {
  std::string text = w.command + "\n" + w.parameters_yaml;
  for (const auto& [k, v] : w.env_variables) text += "\n" + v;
  std::vector<std::string> paths = volume_paths_in(text);
  if (w.code_source && !w.code_source->remote_volume.empty()) paths.push_back(w.code_source->remote_volume);
  std::vector<std::string> keys;
  for (const auto& path : paths) {
    std::string key;
    try {
      key = parse_volume_path(path).volume_key();
    } catch (const FsError&) {
      continue;
    }
    if (!key.empty() && std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  return keys;
}

}  // namespace air
