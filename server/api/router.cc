// `air server`: the one place the routes are wired to the workspace's parts (install_routes: each route file
// gets only the parts it uses), the audit log's recording, the error bodies, and serve(). The routes
// themselves, each with its body limit and token gate, are in their files (runs.cc, nodes.cc, snapshots.cc,
// services.cc, files.cc, unity_catalog.cc, identity.cc; the run page's in server/web/api.cc).
#include "server/api/router.h"

#include <fcntl.h>
#include <pwd.h>
#include <fmt/format.h>
#include <unistd.h>
#include <signal.h>

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "core/wire/api.h"
#include "core/base/error.h"
#include "core/client/local_daemon.h"
#include "server/http/server.h"
#include "server/api/files.h"
#include "server/api/identity.h"
#include "server/api/scheduling.h"
#include "server/api/nodes.h"
#include "server/api/route.h"
#include "server/api/runs.h"
#include "server/api/secrets.h"
#include "server/api/snapshots.h"
#include "server/api/unity_catalog.h"
#include "server/backends/local.h"
#include "server/workspace/config.h"
#include "server/api/services.h"
#include "server/backends/slurm.h"
#include "server/web/api.h"
#include "server/web/ui.h"
#include "server/workspace/workspace.h"

namespace air::server {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The audit log's recording and the error bodies every route shares; the routes are in their files.
class Api {
 public:
  Api(Auth& auth, std::function<int64_t()> now_ms) : auth_(auth), now_ms_(std::move(now_ms)) {}

  void observe(const http::Request& req, const http::Response& res) { audit(req, res); }
  std::string caller(const http::Request& req) const { return identify(req); }

 private:
  // Who sent a request, for the audit log: resolved once the headers are in, before any gate or handler
  // (Server::set_identify), so a request that revokes its own token is still its sender's. Every entry names
  // someone: a user, node:<run>:<attempt>, or one of the two names no user can have (valid_principal_name).
  std::string identify(const http::Request& req) const {
    if (route::bearer(req).empty()) return kNoToken;
    auto who = auth_.authenticate(route::bearer(req));
    return who ? who->name() : kBadToken;
  }
  static constexpr const char* kNoToken = "(no token)";
  static constexpr const char* kBadToken = "(invalid token)";

  // The audit log: every state-changing request, every secret read, and every refused or missing read
  // (401, 403, 404: reads included), with who, the route, the object and the answer's status. A node's own
  // successful traffic (log appends, status, metrics) is left out; its secret reads are kept. Never a body:
  // the objects are names picked from the request, as the route's own handler reads them.
  void audit(const http::Request& req, const http::Response& res) {
    bool secret_read = req.path == "/api/2.0/secrets/get";
    bool read = req.method == "GET" || req.method == "HEAD";
    bool refused = res.status == 401 || res.status == 403 || res.status == 404;
    if (read && !secret_read && !refused) return;
    std::string sender = req.identified ? req.caller : identify(req);
    if (sender.rfind("node:", 0) == 0 && res.status < 400 && !secret_read) return;
    AuditEntry e;
    e.time_ms = now_ms_();
    e.user = sender.empty() ? std::string(kBadToken) : sender;
    e.method = req.method;
    e.route = req.path;
    e.object = audit_object(req);
    e.status = res.status;
    auth_.identity().audit(e);
  }

  // The parameters the route's handler reads: the secrets and MLflow handlers a JSON body first, then the
  // query string (their own parser); the identity and Unity Catalog handlers the query of a read and the
  // body of a write. One source per name, so a request cannot show the log one object and the handler another.
  static json handler_params(const http::Request& req) {
    if (is_secrets_path(req.path) || req.path.rfind("/api/2.0/mlflow/", 0) == 0)
      return secrets_params(req.target, req.body).value_or(json::object());
    json p = json::object();
    if (req.method == "GET" || req.method == "HEAD") {
      for (const auto& [k, v] : req.params) p[k] = v;
      return p;
    }
    json body = json::parse(req.body, nullptr, false);
    return body.is_object() ? body : p;
  }

  // The named object of a request: the scope/key, principal, user, group or token id it names.
  static std::string audit_object(const http::Request& req) {
    json params = handler_params(req);
    auto pick = [&](const char* k) -> std::string {
      return params.contains(k) && params[k].is_string() ? params[k].get<std::string>() : std::string();
    };
    std::string scope = pick("scope"), key = pick("key"), principal = pick("principal");
    std::string out = scope;
    if (!key.empty()) out += "/" + key;
    if (!principal.empty()) out += (out.empty() ? "" : " ") + std::string("principal=") + principal;
    for (const char* k : {"token_id", "userName", "displayName", "application_id", "path", "name", "catalog_name"})
      if (std::string v = pick(k); !v.empty()) out += (out.empty() ? "" : " ") + std::string(k) + "=" + v;
    // Unity Catalog grant changes: "bob +READ_VOLUME -WRITE_VOLUME" for each principal.
    if (params.contains("changes") && params["changes"].is_array())
      for (const auto& c : params["changes"]) {
        if (!c.is_object() || !c.contains("principal") || !c["principal"].is_string()) continue;
        out += (out.empty() ? "" : "; ") + c["principal"].get<std::string>();
        for (const auto& [k, sign] : {std::pair{"add", " +"}, std::pair{"remove", " -"}})
          if (c.contains(k) && c[k].is_array())
            for (const auto& p : c[k])
              if (p.is_string()) out += sign + p.get<std::string>();
      }
    return out;
  }

  Auth& auth_;
  std::function<int64_t()> now_ms_;
};

void install_error_handlers(http::Server& srv) {
  srv.set_exception_handler([](const http::Request&, http::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const HttpError& e) {
      route::send_error(res, e.status, e.code, e.what(), e.diagnostics);
    } catch (const nlohmann::json::exception& e) {
      route::send_error(res, 400, "INVALID_ARGUMENT", std::string("malformed JSON body: ") + e.what());
    } catch (const std::exception& e) {
      route::send_error(res, 500, "INTERNAL", e.what());
    }
  });
  srv.set_error_handler([](http::Response& res, int status, const std::string& message) {
    static const std::map<int, std::string> codes = {
        {400, "INVALID_ARGUMENT"}, {404, "NOT_FOUND"}, {405, "METHOD_NOT_ALLOWED"}, {408, "REQUEST_TIMEOUT"},
        {413, "TOO_LARGE"},        {431, "HEADERS_TOO_LARGE"}, {501, "NOT_IMPLEMENTED"}};
    auto it = codes.find(status);
    route::send_error(res, status, it == codes.end() ? "ERROR" : it->second, message);
  });
}

struct NodeBackend {
  std::unique_ptr<Backend> backend;
  std::string name, advertise_url;
  ServerConfig file;  // $home/server.conf
};

// The backend from the flags, else $home/server.conf, else local.
NodeBackend make_backend(const ServerOptions& o) {
  ServerConfig f = read_server_config(o.home + "/server.conf");
  auto pick = [](const std::string& flag, const std::string& file) { return flag.empty() ? file : flag; };
  NodeBackend nb;
  nb.name = pick(o.backend, f.backend);
  if (nb.name.empty()) nb.name = "local";
  nb.advertise_url = pick(o.advertise_url, f.advertise_url);
  if (!nb.advertise_url.empty() && nb.advertise_url.find("://") == std::string::npos)
    throw usage_error("--advertise-url '" + nb.advertise_url + "' is not a URL", "e.g. http://10.0.0.5:8470");
  if (nb.name == "local") {
    nb.backend = std::make_unique<LocalBackend>(o.air_binary);
  } else if (nb.name == "external") {
    nb.backend = std::make_unique<ExternalBackend>();
  } else if (nb.name == "slurm") {
    bool loopback_only = o.host == "127.0.0.1" || o.host == "localhost" || o.host == "::1" || o.host == "0.0.0.0";
    if (nb.advertise_url.empty() && loopback_only)
      throw usage_error("--backend slurm needs --advertise-url: the URL Slurm nodes use to reach this workspace",
                        "e.g. air server --backend slurm --host 0.0.0.0 --advertise-url http://HEAD_NODE_IP:8470");
    SlurmOptions so;
    so.partition = pick(o.slurm_partition, f.slurm_partition);
    so.account = pick(o.slurm_account, f.slurm_account);
    so.extra_options = o.slurm_options.empty() ? f.slurm_options : o.slurm_options;
    so.pool_partitions = f.slurm_pool_partitions;
    so.class_qos = f.slurm_class_qos;
    so.class_nice = f.slurm_class_nice;
    so.air_binary = o.air_binary;
    nb.backend = std::make_unique<SlurmBackend>(so);
  } else {
    throw usage_error("unknown backend '" + nb.name + "'", "use --backend local, slurm or external");
  }
  nb.file = std::move(f);
  return nb;
}

// "http://10.0.0.5" + 8470 -> "http://10.0.0.5:8470"; a URL with a port is kept as it is.
std::string with_port(const std::string& url, int port) {
  auto scheme = url.find("://");
  auto host_start = scheme + 3;
  auto path = url.find('/', host_start);
  std::string authority = url.substr(host_start, path == std::string::npos ? std::string::npos : path - host_start);
  bool has_port = authority.rfind(':') != std::string::npos && authority.back() != ']';
  std::string base = url.substr(0, path == std::string::npos ? url.size() : path);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return has_port ? base : fmt::format("{}:{}", base, port);
}

}  // namespace

// The one place the routes are wired: each route file gets the parts it uses (docs/architecture.md).
void install_routes(http::Server& srv, Workspace& ws) {
  srv.Get(std::string(api::kPrefix) + "/health", [](const http::Request&, http::Response& res) {
    route::send_json(res, api::Health{"ok", AIR_VERSION, static_cast<int>(::getpid())});
  });
  Auth& auth = ws.auth();
  install_run_routes(srv, auth, ws.runs());
  install_node_routes(srv, auth, ws.lifecycle(), ws.runs());
  install_snapshot_routes(srv, auth, ws.snapshots(), ws.options().max_snapshot_bytes, ws.options().adopt_snapshots_from,
                          ws.options().now_ms);
  install_services_routes(srv, auth, ws.services(), ws.runs(), ws.lifecycle());
  install_web_api(srv, {auth, ws.runs(), ws.lifecycle(), ws.services()});  // the run page's routes (docs/web.md)
  install_web_ui(srv);                                               // the run page itself, at /
  Lifecycle& lifecycle = ws.lifecycle();
  install_files_routes(srv, auth, ws.volume_access(),  // Databricks' Files API over /Volumes (server/api/files.cc)
                       [&lifecycle](const std::string& run_id, int attempt) { return lifecycle.node_spec(run_id, attempt, 0); });
  install_unity_catalog_routes(srv, auth, ws.volume_access());  // volumes and their grants (server/api/unity_catalog.cc)
  install_identity_routes(srv, auth);  // SCIM, tokens, the audit log (server/api/identity.cc)
  install_scheduling_routes(srv, auth, ws.fairness());  // quotas and usage (server/api/scheduling.cc)
  install_error_handlers(srv);
  auto api = std::make_shared<Api>(auth, ws.options().now_ms);
  srv.set_observer([api](const http::Request& req, const http::Response& res) { api->observe(req, res); });
  srv.set_identify([api](const http::Request& req) { return api->caller(req); });
}

int serve(const ServerOptions& o, std::ostream& out, std::ostream& err) {
  fs::create_directories(o.home);
  // Signals are taken by one thread with sigwait; every other thread (pool, ticker) has them blocked.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  // Agents started by this workspace keep their Python environments under the same home.
  ::setenv("AIR_HOME", o.home.c_str(), 1);
  // No credential of whoever started the workspace reaches a process it starts (agents, their commands):
  // they get run-scoped tokens only. The bootstrap admin token lives in $home/server.json alone.
  for (const char* v : {"AIR_TOKEN", "DATABRICKS_TOKEN", "DATABRICKS_CLIENT_SECRET"}) ::unsetenv(v);

  // One daemon per home: held for the whole life of this process, released by the kernel when it ends.
  DaemonLock home_lock = lock_daemon_home(o.home);
  bool tls = !o.cert.empty() || !o.key.empty();
  if (tls && (o.cert.empty() || o.key.empty())) throw usage_error("--cert and --key go together");
  auto srv = std::make_unique<http::Server>(http::Limits{}, http::TlsFiles{o.cert, o.key});

  WorkspaceOptions wo;
  wo.home = o.home;
  wo.bin_dir = o.bin_dir;
  wo.max_snapshot_bytes = o.max_snapshot_bytes;
  wo.adopt_snapshots_from = o.home + "/cache/snapshots";  // where `air run` keeps its archives (cli/run/submit.cc)
  wo.audit_retention_days = o.audit_retention_days;
  wo.max_unpack_bytes = o.max_unpack_bytes;
  wo.max_unpack_entries = o.max_unpack_entries;
  wo.volumes_root = o.volumes_root;
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_name) wo.admin_user = pw->pw_name;  // `air list`'s "you"
  if (const char* m = std::getenv("AIR_SERVER_MINUTE_MS"); m && std::atoll(m) > 0) wo.minute_ms = std::atoll(m);
  NodeBackend nb = make_backend(o);
  wo.isolation = probe_isolation(nb.name, o.single_trust_domain);  // Slurm nodes are other machines: their agents say it
  // The scheduler's pools: GPU counts on this machine; on Slurm the pools that map to partitions.
  for (const auto& [name, gpus] : nb.file.pools) wo.pools.push_back({name, gpus});
  if (nb.name == "slurm" && wo.pools.empty())
    for (const auto& [name, partition] : nb.file.slurm_pool_partitions) wo.pools.push_back({name, 0});
  if (nb.file.default_runtime_minutes) wo.default_runtime_minutes = *nb.file.default_runtime_minutes;
  if (nb.file.preemption) wo.preemption = *nb.file.preemption;
  wo.fair = nb.file.fair;
  Workspace ws(wo, std::move(nb.backend));
  install_routes(*srv, ws);

  ws.set_log_listener([raw = srv.get()] { raw->wake(); });  // log followers wait without a thread
  int port = -1;
  if (o.port == 0 && o.prefer_port > 0) port = srv->bind(o.host, o.prefer_port);
  if (port <= 0) port = srv->bind(o.host, o.port);
  if (port <= 0)
    throw Error(fmt::format("cannot listen on {}:{}", o.host, o.port), "is another air server using that port?");
  std::string shown_host = o.host == "0.0.0.0" ? "127.0.0.1" : o.host;
  std::string url = fmt::format("{}://{}:{}", tls ? "https" : "http", shown_host, port);
  std::string agent_url = nb.advertise_url.empty() ? url : with_port(nb.advertise_url, port);
  ws.set_url(agent_url);
  ws.start();
  std::string token = ws.auth().create_admin_token();
  write_daemon_info(o.home, DaemonInfo{static_cast<int>(::getpid()), port, url, token, o.home});
  write_isolation(o.home, wo.isolation);
  if (!o.daemon) {
    if (agent_url != url || nb.name != "local")
      out << "air server: backend " << nb.name << "; nodes reach this workspace at " << agent_url << "\n";
    out << "air server: listening on " << url << " (state in " << o.home << ")\n"
        << "  export AIR_HOST=" << url << "\n"
        << "  export AIR_TOKEN=$(sed -n 's/.*\"token\": \"\\(.*\\)\".*/\\1/p' " << daemon_info_path(o.home) << ")\n"
        << describe_isolation(wo.isolation);
    out.flush();
  } else {
    err << "air server: listening on " << url << " (pid " << ::getpid() << ")\n";
    err.flush();
  }
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&set, &sig);
    srv->stop();
  });
  srv->listen();
  ws.set_log_listener(nullptr);
  ws.stop();
  if (auto d = read_daemon_info(o.home); d && d->pid == ::getpid()) {
    std::error_code ec;
    fs::remove(daemon_info_path(o.home), ec);
  }
  // The waiter is blocked in sigwait unless a signal ended the server; wake it so it can be joined.
  ::kill(::getpid(), SIGTERM);
  waiter.join();
  return kExitOk;
}

}  // namespace air::server
