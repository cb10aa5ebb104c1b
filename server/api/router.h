// `air server`: serves the Workspace over HTTP(S) under /api/air/v1/ (routes: docs/workspace.md).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace air::server {

struct ServerOptions {
  std::string home;              // state folder ($AIR_HOME)
  std::string volumes_root;      // /Volumes storage; empty: home/volumes (Slurm: a shared file system)
  std::string host = "127.0.0.1";
  int port = 8470;               // 0: a random free port
  int prefer_port = 0;           // with port 0: try this one first (a restarted local daemon keeps its port so
                                 // that running agents find it again)
  std::string cert, key;         // TLS when both are set
  bool daemon = false;           // started by the CLI as the embedded default (quiet)
  std::string bin_dir;           // folder of the air binary (for agents)
  std::string air_binary;        // the binary the local backend starts agents with
  uint64_t max_snapshot_bytes = 4ull << 30;
  uint64_t max_unpack_bytes = 8ull << 30;  // per node and attempt (core/snapshot/snapshot.h UnpackLimits)
  uint64_t max_unpack_entries = 1000000;
  int audit_retention_days = 365;          // 0: the audit log is kept forever
  // Which machines run nodes; empty fields fall back to $home/server.conf (server/workspace/config.h).
  std::string backend;                     // local (default) | slurm
  std::string advertise_url;               // the URL agents use; without a port, the bound port is added
  std::string slurm_partition, slurm_account;
  std::vector<std::string> slurm_options;  // extra sbatch options
  bool single_trust_domain = false;        // every user's runs start even where nothing separates them
};

namespace http { class Server; }
class Workspace;
// Registers every route of the workspace on `srv` (what serve() does; the security test does the same).
// `ws` must outlive the server.
void install_routes(http::Server& srv, Workspace& ws);

// Runs until SIGINT or SIGTERM. Writes $home/server.json (0600: pid, url, token) once listening.
// Returns an exit code.
int serve(const ServerOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace air::server
