// Which workspace the CLI talks to: AIR_HOST + AIR_TOKEN, a profile of $AIR_HOME/config (INI sections like
// the databricks CLI: [DEFAULT], [name] with host / token / ca_file), or nothing -> the embedded local
// workspace (core/client/local_daemon.h). $AIR_HOME defaults to ~/.air.
#pragma once
#include <optional>
#include <string>

namespace air {

struct WorkspaceTarget {
  std::string url;      // http(s)://host:port
  std::string token;
  std::string ca_file;  // optional CA bundle for a self-signed TLS workspace
  std::string source;   // "AIR_HOST", "profile prod", "local workspace"
};

// $AIR_HOME or ~/.air (created on demand by callers that write).
std::string air_home();
// $AIR_CONFIG_FILE or $AIR_HOME/config.
std::string config_file_path();

// The configured remote workspace, or nullopt when none is configured (the embedded default applies).
// profile: -p/--profile; an unknown profile is an error that lists the known ones.
std::optional<WorkspaceTarget> configured_workspace(const std::string& profile);

}  // namespace air
