// Which workspace the CLI talks to, by Databricks' unified-auth rules (docs/cli.md, "Which workspace"):
// -p/--profile, DATABRICKS_CONFIG_PROFILE, DATABRICKS_HOST/TOKEN, ~/.databrickscfg (with its
// [__settings__] default_profile), plus air's own AIR_HOST/AIR_TOKEN and $AIR_HOME/config; with nothing
// configured, the embedded local workspace (core/client/local_daemon.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace air {

struct WorkspaceTarget {
  std::string url;      // http(s)://host:port
  std::string token;
  std::string ca_file;  // optional CA bundle for a self-signed TLS workspace
  std::string source;   // "AIR_HOST", "DATABRICKS_HOST", "profile prod (~/.databrickscfg)", "local workspace"
};

// The one URL rule, used for every host air is given (flags, environment, profiles): a bare host
// ("ws.example.com", "10.0.0.5:8470") means https://, as in the Databricks CLI; write http:// for a
// plain-HTTP workspace. Trailing slashes are dropped.
std::string normalize_host(std::string host);

// $AIR_HOME or ~/.air (created on demand by callers that write).
std::string air_home();
// $AIR_CONFIG_FILE or $AIR_HOME/config: air's own profiles.
std::string config_file_path();
// $DATABRICKS_CONFIG_FILE or ~/.databrickscfg: the Databricks CLI's profiles, shared with it.
std::string databricks_config_path();

// One profile of either file, for `air auth profiles`. Tokens are never part of it.
struct ProfileInfo {
  std::string name, host, file;
  bool has_token = false;
  bool is_default = false;  // [__settings__] default_profile names it
};
std::vector<ProfileInfo> list_profiles();

// Writes (or updates) [name] with host and token in `file`, keeping every other section, key and comment;
// with make_default, also [__settings__] default_profile = name. Atomic, mode 0600.
void write_profile(const std::string& file, const std::string& name, const std::string& host,
                   const std::string& token, bool make_default);

// The configured remote workspace, or nullopt when none is configured (the embedded default applies).
// profile: -p/--profile; an unknown profile is a usage error that lists the known ones.
std::optional<WorkspaceTarget> configured_workspace(const std::string& profile);

// The workspace to use: the configured one, else the embedded local daemon (started on demand).
// Defined in local_daemon.cc, the one place that may start it.
WorkspaceTarget resolve_workspace(const std::string& profile);

}  // namespace air
