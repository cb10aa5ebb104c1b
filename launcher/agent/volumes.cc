// How the node's command sees /Volumes: the workspace's volume storage bound there in a private mount
// namespace (bubblewrap), or, where this node cannot make one, AIR_VOLUMES_ROOT naming that storage.
#include <algorithm>
#include <filesystem>

#include "core/volumes/namespace.h"
#include "launcher/agent/node_agent.h"

namespace air::launcher {

namespace fs = std::filesystem;

VolumesSetup prepare_volumes(const api::NodeSpec& spec, const std::string& cwd, std::vector<std::string>& env,
                             AgentLog& log) {
  // A workload that names no volume runs as before: no namespace around it (its node token could reach no
  // volume anyway), so its process tree is exactly the command's.
  if (spec.volumes_root.empty() || spec.volumes.empty()) return {};
  std::error_code ec;
  fs::create_directories(spec.volumes_root, ec);
  for (const auto& v : spec.volumes) fs::create_directories(fs::path(spec.volumes_root) / v, ec);  // created on first use
  std::string why = probe_volumes_ns(spec.volumes_root);
  if (why.empty()) {
    // Only the volumes the run's owner may read are bound; those it may not write, read-only.
    std::vector<VolumeMount> mounts;
    std::string shown;
    for (const auto& v : spec.volumes) {
      bool ro = std::find(spec.read_only_volumes.begin(), spec.read_only_volumes.end(), v) != spec.read_only_volumes.end();
      mounts.push_back({v, ro});
      shown += " /Volumes/" + v + (ro ? " (read-only)" : "");
    }
    log.info("volumes: /Volumes is " + spec.volumes_root + " (private mount namespace, bubblewrap), only" + shown);
    return {volumes_ns_prefix(spec.volumes_root, mounts, cwd), ""};
  }
  VolumesSetup out{{}, volumes_fallback_notice(why, spec.volumes_root)};
  log.info(out.notice);
  for (auto it = env.begin(); it != env.end();)
    it = it->rfind("AIR_VOLUMES_ROOT=", 0) == 0 ? env.erase(it) : it + 1;
  env.push_back("AIR_VOLUMES_ROOT=" + spec.volumes_root);
  return out;
}

}  // namespace air::launcher
