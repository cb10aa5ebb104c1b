// What separates one user's runs from another's on this workspace's backend (docs/security.md, "Threat
// model"): said by `air server` at start, kept in $AIR_HOME/isolation.json for `air server status`, and
// the rule that refuses a second user's run where nothing separates them.
#pragma once
#include <optional>
#include <string>

namespace air::server {

struct Isolation {
  std::string backend = "local";    // local | slurm | external
  bool probed = false;              // local: the sandbox was built once on this machine (else the nodes say)
  bool sandbox = false;             // probed and it works
  std::string why_not;              // probed and it does not: why (bwrap missing, user namespaces off, AIR_SANDBOX=off)
  bool per_owner_accounts = false;  // the workspace is root: each owner's commands run as air-u-<owner>
  bool single_trust_domain = false; // the admin said every user trusts every other (--single-trust-domain)
};

// Probes this machine for the local backend (nothing is probed for the others: their nodes are elsewhere).
Isolation probe_isolation(const std::string& backend, bool single_trust_domain);

// Lines for `air server` and `air server status`, each starting with "isolation: ".
std::string describe_isolation(const Isolation& iso);

// $home/isolation.json, written at start; read back by `air server status` (nullopt: none or unreadable).
void write_isolation(const std::string& home, const Isolation& iso);
std::optional<Isolation> read_isolation(const std::string& home);

// Whether `user`'s runs must be refused (local backend: at submit) or their nodes must refuse to run
// without a sandbox (other backends): the workspace has more than one user, `user` is not the workspace's
// own admin (whose account the commands would run as anyway), and the admin did not declare one trust domain.
bool needs_separation(const Isolation& iso, const std::string& user, const std::string& bootstrap_admin, size_t users);

// The refusal for `user`'s run where this workspace knows it cannot separate it, else nullopt.
std::optional<std::string> isolation_refusal(const Isolation& iso, const std::string& user,
                                             const std::string& bootstrap_admin, size_t users);

}  // namespace air::server
