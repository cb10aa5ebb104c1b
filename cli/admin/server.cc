// `air server`: run a workspace in the foreground (a shared one: --host/--port/--cert/--key), or inspect and
// stop the embedded local one (`air server status`, `air server stop`).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/verbs.h"
#include "core/client/config.h"
#include "cli/output.h"
#include "core/base/error.h"
#include "core/client/local_daemon.h"
#include "server/api/router.h"
#include "server/workspace/isolation.h"

namespace air::cli {

namespace {

struct ServerFlags {
  std::string home, host = "127.0.0.1", cert, key;
  int port = 8470, prefer_port = 0;
  bool daemon = false, single_trust_domain = false;
  uint64_t max_snapshot_mb = 4096;
  int audit_retention_days = 365;
  uint64_t max_unpack_bytes = 8ull << 30, max_unpack_entries = 1000000;
  std::string backend, advertise_url, slurm_partition, slurm_account, volumes_root;
  std::vector<std::string> slurm_options;
};

// Running means a live daemon holds the home's lock; a busy one is running, only slow to answer.
void run_status(Context& ctx, const std::string& home_flag) {
  std::string home = home_flag.empty() ? air_home() : home_flag;
  auto d = read_daemon_info(home);
  bool up = daemon_lock_held(home);
  bool answering = up && d && daemon_healthy(*d, 5000);
  auto iso = up ? server::read_isolation(home) : std::nullopt;
  if (ctx.global.output == "json") {
    nlohmann::json j{{"running", up}, {"home", home}};
    if (up && d) j.update({{"pid", d->pid}, {"url", d->url}, {"answering", answering}});
    if (iso)
      j["isolation"] = {{"backend", iso->backend}, {"sandbox", iso->probed ? nlohmann::json(iso->sandbox) : nlohmann::json()},
                        {"why_not", iso->why_not}, {"per_owner_accounts", iso->per_owner_accounts},
                        {"single_trust_domain", iso->single_trust_domain}};
    print_json(ctx, j);
  } else if (up && d) {
    *ctx.out << "local workspace: running (pid " << d->pid << ") at " << d->url
             << (answering ? "" : " (busy: not answering within 5 s)") << "\n  state: " << home << "\n";
    if (iso) {
      std::string lines = server::describe_isolation(*iso);
      for (size_t at = 0, nl; (nl = lines.find('\n', at)) != std::string::npos; at = nl + 1)
        *ctx.out << "  " << lines.substr(at, nl - at + 1);
    }
  } else if (up) {
    *ctx.out << "local workspace: starting (state: " << home << ")\n";
  } else {
    *ctx.out << "local workspace: not running (state: " << home << ")\n"
             << "  it starts on demand with 'air run', or in the foreground with 'air server'\n";
  }
  if (!up) ctx.exit_code = kExitFailed;
}

void run_stop(Context& ctx, const std::string& home_flag) {
  std::string home = home_flag.empty() ? air_home() : home_flag;
  bool stopped = stop_local_daemon(home);
  if (ctx.global.output == "json")
    print_json(ctx, nlohmann::json{{"stopped", stopped}, {"home", home}});
  else
    *ctx.out << (stopped ? "local workspace stopped\n" : "local workspace was not running\n");
}

}  // namespace

void setup_server(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("server", "Run a workspace, or manage the local one (status, stop)");
  auto f = std::make_shared<ServerFlags>();
  cmd->add_option("--home", f->home, "State folder (default: $AIR_HOME or ~/.air)")->type_name("DIR");
  cmd->add_option("--host", f->host, "Address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", f->port, "Port (0: any free port)")->check(CLI::Range(0, 65535));
  cmd->add_option("--cert", f->cert, "TLS certificate (PEM)")->check(CLI::ExistingFile);
  cmd->add_option("--key", f->key, "TLS private key (PEM)")->check(CLI::ExistingFile);
  cmd->add_option("--max-snapshot-mb", f->max_snapshot_mb, "Largest snapshot accepted, in MiB");
  cmd->add_option("--audit-retention-days", f->audit_retention_days,
                  "Delete audit log entries older than this many days, on start and hourly (default 365; 0: keep all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-unpack-bytes", f->max_unpack_bytes,
                  "Disk a node may unpack one snapshot to, in bytes (counted in 4 KiB blocks; default 8 GiB)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-unpack-entries", f->max_unpack_entries, "Files, folders and links in one snapshot (default 1000000)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--backend", f->backend,
                  "What runs nodes: local (default), slurm, or external (agents started by someone else)")
      ->check(CLI::IsMember({"local", "slurm", "external"}));
  cmd->add_option("--advertise-url", f->advertise_url,
                  "URL the nodes use to reach this workspace (the port is added when missing)");
  cmd->add_option("--slurm-partition", f->slurm_partition, "sbatch --partition");
  cmd->add_option("--slurm-account", f->slurm_account, "sbatch --account");
  cmd->add_option("--slurm-option", f->slurm_options, "Extra sbatch option, e.g. --qos=high (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--volumes-root", f->volumes_root,
                  "Where /Volumes/<catalog>/<schema>/<volume> is kept (default HOME/volumes; on Slurm a shared "
                  "file system every node mounts at the same path)");
  cmd->add_flag("--single-trust-domain", f->single_trust_domain,
                "Start every user's runs even where the backend cannot seal them off from each other (all users "
                "trust each other; docs/security.md)");
  cmd->add_flag("--daemon", f->daemon, "Started by the CLI as the local workspace")->group("");
  cmd->add_option("--prefer-port", f->prefer_port, "With --port 0: try this port first")->group("");
  cmd->require_subcommand(0, 1);
  auto* status = cmd->add_subcommand("status", "Show whether the local workspace is running");
  auto* stop = cmd->add_subcommand("stop", "Stop the local workspace");
  status->callback([&ctx, f] { run_status(ctx, f->home); });
  stop->callback([&ctx, f] { run_stop(ctx, f->home); });
  cmd->callback([cmd, &ctx, f] {
    if (!cmd->get_subcommands().empty()) return;
    server::ServerOptions o;
    o.home = f->home.empty() ? air_home() : f->home;
    o.host = f->host;
    o.port = f->port;
    o.prefer_port = f->prefer_port;
    o.cert = f->cert;
    o.key = f->key;
    o.daemon = f->daemon;
    o.air_binary = default_air_binary();
    o.bin_dir = o.air_binary.substr(0, o.air_binary.rfind('/'));
    o.max_snapshot_bytes = f->max_snapshot_mb << 20;
    o.max_unpack_bytes = f->max_unpack_bytes;
    o.max_unpack_entries = f->max_unpack_entries;
    o.audit_retention_days = f->audit_retention_days;
    o.backend = f->backend;
    o.advertise_url = f->advertise_url;
    o.slurm_partition = f->slurm_partition;
    o.slurm_account = f->slurm_account;
    o.slurm_options = f->slurm_options;
    o.single_trust_domain = f->single_trust_domain;
    if (!f->volumes_root.empty()) o.volumes_root = std::filesystem::absolute(f->volumes_root).lexically_normal().string();
    ctx.exit_code = server::serve(o, *ctx.out, *ctx.err);
  });
}

}  // namespace air::cli
