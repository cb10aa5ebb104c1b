// How a node command sees /Volumes: a private mount namespace made without root by bubblewrap, where the
// workspace's volume storage is bound at /Volumes and everything else is the host's (docs/volumes.md).
#pragma once
#include <string>
#include <vector>

namespace air {

// argv words to put before a command so that it runs with `storage` bound at /Volumes and `cwd` as its
// working directory: bwrap with each top-level entry of / bound back in place (its root is a fresh tmpfs,
// so /Volumes can be made there without touching the host's /).
std::vector<std::string> volumes_ns_prefix(const std::string& storage, const std::string& cwd);

// Runs `true` that way once: "" when it works, else a one-line reason (bwrap missing, user namespaces off).
std::string probe_volumes_ns(const std::string& storage);

// The fallback's message, said once at submit and in the node log.
std::string volumes_fallback_notice(const std::string& why, const std::string& storage);

}  // namespace air
