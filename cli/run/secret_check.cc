// The dry-run's secret existence check over the secrets API (list-secrets per scope: names only).
#include "cli/run/secret_check.h"

#include <cstdlib>
#include <map>
#include <set>

#include "core/client/config.h"
#include "core/client/local_daemon.h"
#include "core/secrets/refs.h"
#include "core/secrets/client.h"

namespace air::cli {

std::optional<ReachableWorkspace> dry_run_workspace(const Context& ctx) {
  if (auto t = configured_workspace(ctx.global.profile)) return ReachableWorkspace{t->url, t->token, t->source + " (" + t->url + ")"};
  if (auto d = read_daemon_info(air_home()); d && daemon_healthy(*d))
    return ReachableWorkspace{d->url, d->token, "local workspace (" + d->url + ")"};
  return std::nullopt;
}

SecretCheck check_workload_secrets(const Workload& w, const std::string& file, const Context& ctx) {
  SecretCheck out;
  if (w.secrets.empty()) return out;
  WorkspaceEndpoint ep;
  try {
    auto reachable = dry_run_workspace(ctx);
    if (!reachable) {
      out.note = "no workspace is running, so the secrets' existence was not checked (air run checks it)";
      return out;
    }
    ep = {reachable->url, reachable->token};
    out.workspace = reachable->label;
    SecretsClient client(ep, 5000);
    std::map<std::string, std::set<std::string>> keys;  // scope -> keys; absent: the scope does not exist
    std::set<std::string> missing_scopes;
    for (const auto& s : w.secrets) {
      if (keys.count(s.scope) || missing_scopes.count(s.scope)) continue;
      try {
        for (const auto& info : client.list_secrets(s.scope)) keys[s.scope].insert(info.key);
      } catch (const SecretsApiError& e) {
        if (e.code() != "RESOURCE_DOES_NOT_EXIST") throw;
        missing_scopes.insert(s.scope);
      }
    }
    out.checked = true;
    for (const auto& s : w.secrets) {
      if (!missing_scopes.count(s.scope) && keys[s.scope].count(s.key)) continue;
      out.missing.push_back(missing_secret_diagnostic(s, file));
    }
  } catch (const Error& e) {
    out.checked = false;
    out.note = std::string("the secrets' existence was not checked: ") + e.what();
  }
  return out;
}

}  // namespace air::cli
