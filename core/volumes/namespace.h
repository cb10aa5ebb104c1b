// How a node command sees /Volumes: a private mount namespace made without root by bubblewrap, where the
// workspace's volume storage is bound at /Volumes and everything else is the host's (docs/volumes.md).
#pragma once
#include <string>
#include <vector>

namespace air {

// One volume a run may use: "catalog/schema/volume", read-only where its owner may only read it.
struct VolumeMount {
  std::string key;
  bool read_only = false;
};

// argv words to put before a command so that it runs with each of `mounts` bound at /Volumes/<key> (from
// `storage`/<key>; read-only ones with --ro-bind) and `cwd` as its working directory: bwrap with each
// top-level entry of / bound back in place (its root is a fresh tmpfs, so /Volumes can be made there
// without touching the host's /). No mounts: the whole of `storage` at /Volumes (the probe).
std::vector<std::string> volumes_ns_prefix(const std::string& storage, const std::vector<VolumeMount>& mounts,
                                           const std::string& cwd);

// Runs `true` that way once: "" when it works, else a one-line reason (bwrap missing, user namespaces off).
std::string probe_volumes_ns(const std::string& storage);

// The fallback's message, said once at submit and in the node log.
std::string volumes_fallback_notice(const std::string& why, const std::string& storage);

}  // namespace air
