// The workspace's account of run isolation (see isolation.h).
#include "server/workspace/isolation.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/sandbox/sandbox.h"
#include "server/backends/slurm_accounts.h"

namespace air::server {

Isolation probe_isolation(const std::string& backend, bool single_trust_domain) {
  Isolation iso;
  iso.backend = backend;
  iso.single_trust_domain = single_trust_domain;
  iso.per_owner_accounts = ::geteuid() == 0;
  if (backend == "local") {
    iso.probed = true;
    iso.why_not = probe_sandbox();
    iso.sandbox = iso.why_not.empty();
  }
  return iso;
}

std::string describe_isolation(const Isolation& iso) {
  std::string accounts = iso.per_owner_accounts ? "; each user's commands run as their own unix account (air-u-<user>)"
                                                : "; commands run as this workspace's unix account";
  std::string out;
  if (iso.probed && iso.sandbox) {
    out = "isolation: " + iso.backend +
          " backend: every run's commands in a sandbox (bubblewrap: own PID namespace, read-only system, only "
          "their node folder, code, Python environment and volumes; nothing of the workspace's home)" + accounts + "\n";
  } else if (iso.probed) {
    out = "isolation: NONE on the " + iso.backend + " backend (" + iso.why_not +
          "): a run's commands can read this workspace's state and other runs' processes; they run as this "
          "workspace's unix account\n";
    out += iso.single_trust_domain
               ? "isolation: --single-trust-domain: every user's runs start anyway (all users trust each other)\n"
               : "isolation: only the workspace admin's runs start while it has other users; install bubblewrap, "
                 "or restart with --single-trust-domain if all users trust each other\n";
  } else {
    if (iso.backend == "slurm") accounts = slurm_job_accounts_note(iso.per_owner_accounts);  // issue 40
    out = "isolation: " + iso.backend + " backend: each node builds the run sandbox itself (bubblewrap)" + accounts +
          (iso.single_trust_domain ? "; --single-trust-domain: a node without one runs the command anyway\n"
                                   : "; a node that cannot build one refuses another user's run\n");
  }
  return out;
}

void write_isolation(const std::string& home, const Isolation& iso) {
  nlohmann::json j{{"backend", iso.backend},           {"probed", iso.probed},
                   {"sandbox", iso.sandbox},           {"why_not", iso.why_not},
                   {"per_owner_accounts", iso.per_owner_accounts}, {"single_trust_domain", iso.single_trust_domain}};
  std::string path = home + "/isolation.json", tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << j.dump(2) << "\n";
    if (!f) return;  // status then says it does not know; the workspace runs on
  }
  ::rename(tmp.c_str(), path.c_str());
}

std::optional<Isolation> read_isolation(const std::string& home) {
  std::ifstream f(home + "/isolation.json");
  if (!f) return std::nullopt;
  auto j = nlohmann::json::parse(f, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  Isolation iso;
  iso.backend = j.value("backend", "local");
  iso.probed = j.value("probed", false);
  iso.sandbox = j.value("sandbox", false);
  iso.why_not = j.value("why_not", "");
  iso.per_owner_accounts = j.value("per_owner_accounts", false);
  iso.single_trust_domain = j.value("single_trust_domain", false);
  return iso;
}

bool needs_separation(const Isolation& iso, const std::string& user, const std::string& bootstrap_admin, size_t users) {
  return !iso.single_trust_domain && users > 1 && user != bootstrap_admin;
}

std::optional<std::string> isolation_refusal(const Isolation& iso, const std::string& user,
                                             const std::string& bootstrap_admin, size_t users) {
  if (!iso.probed || iso.sandbox || !needs_separation(iso, user, bootstrap_admin, users)) return std::nullopt;
  return fmt::format(
      "this workspace cannot seal runs off from each other on the {} backend ({}), and it has {} users: a run of "
      "'{}' could read the workspace's state and the other users' secrets, code and processes, so only '{}' may "
      "start runs here. Install bubblewrap (Debian package bubblewrap) with unprivileged user namespaces allowed, "
      "or, if every user trusts every other, restart the workspace with 'air server --single-trust-domain'",
      iso.backend, iso.why_not, users, user, bootstrap_admin);
}

}  // namespace air::server
