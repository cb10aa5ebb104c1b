// HTTP routes of the workspace: authentication, JSON (de)serialisation, error bodies; the logic lives in
// Workspace. This file is the one place routes are registered: each with its body limit and its token
// check, which the server core (server/http/server.h) runs before any body byte is read.
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
#include "server/health/run_health.h"
#include "server/api/identity.h"
#include "server/api/scheduling.h"
#include "server/api/secrets.h"
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

const std::string kApi = api::kPrefix;

void send_error(http::Response& res, int status, const std::string& code, const std::string& message,
                const std::vector<Diagnostic>& diags = {}, json extra = json::object()) {
  api::ErrorBody b{code, message, diags};
  extra["error"] = b;
  res.status = status;
  res.set_content(extra.dump(), "application/json");
}

void send_json(http::Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

std::string bearer(const http::Request& req) {
  auto h = req.get_header_value("Authorization");
  if (h.rfind("Bearer ", 0) == 0) return h.substr(7);
  return {};
}

uint64_t query_u64(const http::Request& req, const char* name, uint64_t dflt) {
  if (!req.has_param(name)) return dflt;
  const std::string v = req.get_param_value(name);
  try {
    size_t used = 0;
    uint64_t n = std::stoull(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return n;
  } catch (const std::exception&) {
    throw HttpError(400, "INVALID_ARGUMENT", fmt::format("query parameter {}={} is not a number", name, v));
  }
}

// Body limits per route, enforced from the headers before the body is read.
constexpr uint64_t kJsonBody = 1 << 20;
constexpr uint64_t kLogBody = 8 << 20;

class Api {
 public:
  Api(http::Server& srv, Workspace& ws) : srv_(srv), ws_(ws) {}

  void observe(const http::Request& req, const http::Response& res) { audit(req, res); }
  std::string caller(const http::Request& req) const { return identify(req); }

  void install() {
    srv_.Get(kApi + "/health", [](const http::Request&, http::Response& res) {
      send_json(res, api::Health{"ok", AIR_VERSION, static_cast<int>(::getpid())});
    });
    user("POST", "/runs", [this](const auto& req, auto& res, const auto&, const Principal& who) {
      api::SubmitRequest sr = parse_body(req).template get<api::SubmitRequest>();
      send_json(res, ws_.submit(sr, who), 201);
    });
    // ?all_users=1: every run the caller may view; else the caller's own.
    user("GET", "/runs", [this](const auto& req, auto& res, const auto&, const Principal& who) {
      int limit = static_cast<int>(query_u64(req, "limit", 0));
      bool all = flag(req, "all_status"), all_users = flag(req, "all_users");
      send_json(res, ws_.list(limit, all, who, all_users));
    });
    user("GET", R"(/runs/([A-Za-z0-9_-]+))", [this](const auto&, auto& res, const auto& m, const Principal& who) {
      ws_.require_run(who, m[1], RunLevel::kCanView);
      send_json(res, ws_.get(m[1]));
    });
    user("POST", R"(/runs/([A-Za-z0-9_-]+)/cancel)", [this](const auto&, auto& res, const auto& m, const Principal& who) {
      ws_.require_run(who, m[1], RunLevel::kCanManageRun);
      send_json(res, ws_.cancel(m[1]));
    });
    node_routes();
    log_routes();
    snapshot_routes();
    services_routes();
    install_web_api(srv_, ws_);  // the run page's routes (docs/web.md)
    install_web_ui(srv_);        // the run page itself, at /
    install_files_routes(srv_, ws_);  // Databricks' Files API over /Volumes (server/api/files.cc)
    install_unity_catalog_routes(srv_, ws_.auth(), ws_.volume_access());  // volumes and their grants (server/api/unity_catalog.cc)
    install_identity_routes(srv_, ws_.auth());  // SCIM, tokens, the audit log (server/api/identity.cc)
    install_scheduling_routes(srv_, ws_.auth(), ws_.fairness());  // quotas and usage (server/api/scheduling.cc)
    srv_.set_exception_handler([](const http::Request&, http::Response& res, std::exception_ptr ep) {
      try {
        std::rethrow_exception(ep);
      } catch (const HttpError& e) {
        send_error(res, e.status, e.code, e.what(), e.diagnostics);
      } catch (const nlohmann::json::exception& e) {
        send_error(res, 400, "INVALID_ARGUMENT", std::string("malformed JSON body: ") + e.what());
      } catch (const std::exception& e) {
        send_error(res, 500, "INTERNAL", e.what());
      }
    });
    srv_.set_error_handler([](http::Response& res, int status, const std::string& message) {
      static const std::map<int, std::string> codes = {
          {400, "INVALID_ARGUMENT"}, {404, "NOT_FOUND"}, {405, "METHOD_NOT_ALLOWED"}, {408, "REQUEST_TIMEOUT"},
          {413, "TOO_LARGE"},        {431, "HEADERS_TOO_LARGE"}, {501, "NOT_IMPLEMENTED"}};
      auto it = codes.find(status);
      send_error(res, status, it == codes.end() ? "ERROR" : it->second, message);
    });
  }

 private:
  using Match = std::smatch;
  using Handler = std::function<void(const http::Request&, http::Response&, const Match&)>;

  static json parse_body(const http::Request& req) {
    try {
      return json::parse(req.body);
    } catch (const json::exception&) {
      throw HttpError(400, "INVALID_ARGUMENT", "the request body is not valid JSON");
    }
  }

  static bool flag(const http::Request& req, const char* name) {
    return req.get_param_value(name) == "1" || req.get_param_value(name) == "true";
  }

  Principal auth(const http::Request& req) const {
    std::string why;
    auto p = ws_.auth().authenticate(bearer(req), &why);
    if (!p) throw HttpError(401, "UNAUTHENTICATED", why);
    return *p;
  }

  // Gates run after the headers, before the body: a request without the right token is answered at once.
  // User routes take any user's token; what the user may do is each handler's check (access.h).
  http::Gate user_gate() const {
    return [this](const http::Request& req, http::Response&) {
      if (auth(req).is_node())
        throw HttpError(403, "PERMISSION_DENIED", "a node token may use only its own attempt's node endpoints");
      return true;
    };
  }
  // Node endpoints accept the node token of that very run and attempt (or an admin's token).
  http::Gate node_gate() const {
    return [this](const http::Request& req, http::Response&) {
      Principal p = auth(req);
      if (p.admin) return true;
      if (!p.is_node())
        throw HttpError(403, "PERMISSION_DENIED", "only the run's node token (or an admin) may use node endpoints");
      if (p.run_id != req.matches[1].str() || p.attempt != std::stoi(req.matches[2].str()))
        throw HttpError(403, "PERMISSION_DENIED", "this node token belongs to another run or attempt");
      return true;
    };
  }

  void route(const std::string& method, const std::string& pattern, Handler h, http::RouteOptions o) {
    auto wrapped = [h](const http::Request& req, http::Response& res) { h(req, res, req.matches); };
    std::string p = kApi + pattern;
    if (method == "GET") srv_.Get(p, wrapped, std::move(o));
    else if (method == "POST") srv_.Post(p, wrapped, std::move(o));
  }

  using UserHandler = std::function<void(const http::Request&, http::Response&, const Match&, const Principal&)>;
  void user(const std::string& method, const std::string& pattern, UserHandler h) {
    route(method, pattern, [this, h](const auto& req, auto& res, const auto& m) { h(req, res, m, auth(req)); },
          {kJsonBody, user_gate()});
  }

  // Who sent a request, for the audit log: resolved once the headers are in, before any gate or handler
  // (Server::set_identify), so a request that revokes its own token is still its sender's. Every entry names
  // someone: a user, node:<run>:<attempt>, or one of the two names no user can have (valid_principal_name).
  std::string identify(const http::Request& req) const {
    if (bearer(req).empty()) return kNoToken;
    auto who = ws_.auth().authenticate(bearer(req));
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
    e.time_ms = ws_.now_ms();
    e.user = sender.empty() ? std::string(kBadToken) : sender;
    e.method = req.method;
    e.route = req.path;
    e.object = audit_object(req);
    e.status = res.status;
    ws_.auth().identity().audit(e);
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

  void node(const std::string& method, const std::string& suffix, Handler h, uint64_t max_body = kJsonBody) {
    std::string pattern = R"(/runs/([A-Za-z0-9_-]+)/attempts/(\d{1,6})/nodes/(\d{1,6}))" + suffix;
    route(method, pattern, std::move(h), {max_body, node_gate()});
  }

  void node_routes() {
    node("GET", "/spec", [this](const auto&, auto& res, const auto& m) {
      send_json(res, ws_.node_spec(m[1], std::stoi(m[2]), std::stoi(m[3])));
    });
    node("POST", "/status", [this](const auto& req, auto& res, const auto& m) {
      auto rep = parse_body(req).template get<api::NodeStatusReport>();
      send_json(res, ws_.node_status(m[1], std::stoi(m[2]), std::stoi(m[3]), rep));
    });
  }

  static void send_log(http::Response& res, LogRead& r) {
    res.set_header(api::kHeaderLogOffset, std::to_string(r.chunk.offset));
    res.set_header(api::kHeaderLogSize, std::to_string(r.chunk.size));
    res.set_header(api::kHeaderLogDone, r.done ? "1" : "0");
    res.set_content(std::move(r.chunk.data), "application/octet-stream");
  }

  void log_routes() {
    node("POST", "/logs", [this](const auto& req, auto& res, const auto& m) {
      uint64_t offset = query_u64(req, "offset", 0);
      auto r = ws_.append_log(m[1], std::stoi(m[2]), std::stoi(m[3]), offset, req.body);
      if (r.gap)
        send_error(res, 409, "LOG_GAP",
                   fmt::format("offset {} is beyond the stored log ({} bytes); resend from {}", offset, r.size, r.size),
                   {}, json{{"size", r.size}});
      else
        send_json(res, api::LogAppendReply{r.size});
    }, kLogBody);
    // A follower with nothing new waits without a thread: the response is deferred until the log grows
    // (LogStore wakes the server) or wait_ms passes.
    user("GET", R"(/runs/([A-Za-z0-9_-]+)/attempts/(\d{1,6})/nodes/(\d{1,6})/logs)",
          [this](const auto& req, auto& res, const auto& m, const Principal& who) {
            ws_.require_run(who, m[1], RunLevel::kCanView);
            std::optional<uint64_t> offset, tail;
            if (req.has_param("offset")) offset = query_u64(req, "offset", 0);
            if (req.has_param("tail")) tail = query_u64(req, "tail", 0);
            uint64_t max_bytes = std::min<uint64_t>(query_u64(req, "max_bytes", 4 << 20), 64 << 20);
            auto wait = std::chrono::milliseconds(std::min<uint64_t>(query_u64(req, "wait_ms", 0), 30000));
            std::string run = m[1];
            int attempt = std::stoi(m[2]), node = std::stoi(m[3]);
            LogRead r = ws_.read_log(run, attempt, node, offset, tail, max_bytes, std::chrono::milliseconds(0));
            uint64_t from = r.chunk.offset;
            bool ready = !r.chunk.data.empty() || r.done || wait.count() == 0;
            send_log(res, r);
            if (ready) return;
            std::string token = bearer(req);
            res.defer(std::chrono::steady_clock::now() + wait, [this, run, attempt, node, from, max_bytes, token](auto& res) {
              // A follower whose token is revoked or expires meanwhile is answered 401 at once.
              std::string why;
              if (!ws_.auth().authenticate(token, &why)) {
                res = http::Response();
                send_error(res, 401, "UNAUTHENTICATED", why);
                return true;
              }
              LogRead r = ws_.read_log(run, attempt, node, from, std::nullopt, max_bytes, std::chrono::milliseconds(0));
              bool ready = !r.chunk.data.empty() || r.done;
              send_log(res, r);
              return ready;
            });
          });
  }

  static std::string snapshot_missing(const std::string& digest) {
    return "snapshot " + digest + " not found (or not yours to read): upload it with the run that uses it (air run)";
  }

  // An open blob file, closed when the response is done with it.
  struct OpenFile {
    explicit OpenFile(int f) : fd(f) {}
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;
    ~OpenFile() { ::close(fd); }
    int fd;
  };

  void snapshot_routes() {
    const std::string pattern = kApi + R"(/snapshots/([0-9a-f]{64}))";
    // Read by admins, its uploaders, the node tokens of runs made from it and users who may view such a run
    // (Snapshots::refusal); anyone else is answered exactly as for a digest nobody uploaded.
    http::Gate reader = [this](const http::Request& req, http::Response&) {
      std::string digest = req.matches[1];
      if (ws_.snapshots().refusal(auth(req), digest)) throw HttpError(404, "NOT_FOUND", snapshot_missing(digest));
      return true;
    };
    srv_.Get(pattern, [this](const http::Request& req, http::Response& res) {
      std::string digest = req.matches[1];
      if (!ws_.snapshots().blobs().has(digest)) return send_error(res, 404, "NOT_FOUND", snapshot_missing(digest));
      uint64_t size = ws_.snapshots().blobs().size(digest);
      int fd = ::open(ws_.snapshots().blobs().path(digest).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw HttpError(500, "INTERNAL", "cannot open snapshot " + digest);
      auto file = std::make_shared<OpenFile>(fd);
      res.set_content_provider(size, "application/octet-stream", [file](uint64_t offset, uint64_t n, http::DataSink& sink) {
        std::vector<char> buf(static_cast<size_t>(n));
        ssize_t got = ::pread(file->fd, buf.data(), buf.size(), static_cast<off_t>(offset));
        if (got <= 0) return false;
        sink.write(buf.data(), static_cast<size_t>(got));
        return true;
      });
    }, {0, reader});
    auto uploader = user_gate();  // any user submits code
    // Streamed to disk while hashed (BlobWriter); a body past the limit is refused from its headers (413).
    // A caller who may already read the digest uploads nothing (an unchanged tree costs one request); anyone
    // else sends the bytes, which must hash to the digest, whether or not it exists: the answer (201) is the
    // same either way, and having sent them, the caller is one of its uploaders.
    srv_.Put(pattern, [this](const http::Request& req, http::Response& res, const http::ContentReader& read) {
      std::string digest = req.matches[1];
      Principal who = auth(req);
      if (ws_.snapshots().blobs().has(digest) && !ws_.snapshots().refusal(who, digest)) {
        read([](const char*, size_t) { return true; });
        return send_json(res, json{{"digest", digest}, {"bytes", ws_.snapshots().blobs().size(digest)}, {"existed", true}});
      }
      auto w = ws_.snapshots().blobs().begin(digest, ws_.options().max_snapshot_bytes);
      bool fits = true;
      bool complete = read([&](const char* d, size_t n) { return fits = w->write(d, n); });
      if (!fits && (w->write_errno() == ENOSPC || w->write_errno() == EDQUOT))
        throw HttpError(507, "DISK_FULL",
                        fmt::format("the workspace's disk is full: the snapshot cannot be stored ({}); free space "
                                    "under the workspace's home and submit again", std::strerror(w->write_errno())));
      if (!fits && w->write_errno())
        throw HttpError(500, "WRITE_FAILED", fmt::format("the snapshot cannot be stored: {}", std::strerror(w->write_errno())));
      if (!fits)
        throw HttpError(413, "TOO_LARGE", fmt::format("snapshot is larger than this workspace accepts ({} bytes)",
                                                     ws_.options().max_snapshot_bytes));
      if (!complete) throw HttpError(400, "INCOMPLETE_UPLOAD", "the snapshot upload ended before its last byte");
      try {
        w->commit();
      } catch (const Error& e) {
        throw HttpError(400, "DIGEST_MISMATCH", e.what());
      }
      ws_.snapshots().uploads().record(digest, who.user, ws_.now_ms());
      send_json(res, json{{"digest", digest}, {"bytes", w->bytes()}, {"existed", false}}, 201);
    }, {ws_.options().max_snapshot_bytes, uploader});
  }

  // Databricks' secrets API and MLflow's tracking API, at their own paths (server/api/services.h says who may
  // do what). A node token reads only the secrets its run references.
  void services_routes() {
    auto h = [this](const http::Request& req, http::Response& res) {
      auto who = ws_.auth().authenticate(bearer(req));
      std::vector<SecretRef> refs;
      if (who && who->is_node() && is_secrets_path(req.path))  // MLflow calls are frequent: skip the spec
        for (const auto& s : ws_.node_spec(who->run_id, who->attempt, 0).secrets) refs.push_back({s.scope, s.key});
      RunCheck may_use_run = [this, &who](const std::string& run, bool write) -> std::optional<RunRefusal> {
        auto a = ws_.run_access(run);
        if (run_level(*who, a.owner, a.grants) < RunLevel::kCanView) return RunRefusal{true, {}};
        auto why = run_refusal(*who, run, a.owner, a.grants, write ? RunLevel::kCanManageRun : RunLevel::kCanView);
        return why ? std::optional<RunRefusal>(RunRefusal{false, *why}) : std::nullopt;
      };
      ApiReply r = handle_services_request(ws_.services(), who, refs, req.method, req.target, req.body, may_use_run);
      // Metrics from a node of a running attempt keep its stall watchdog quiet (no log line needed).
      if (who && who->is_node() && r.status == 200 && req.method == "POST" &&
          (req.path == "/api/2.0/mlflow/runs/log-batch" || req.path == "/api/2.0/mlflow/runs/log-metric"))
        if (!health::only_system_metrics(req.body)) ws_.note_metrics(who->run_id, who->attempt);  // an agent's sample is not progress
      send_json(res, r.body, r.status);
    };
    // No body is read without a known token (the handlers answer the caller's rights in their own shapes).
    http::Gate any_token = [this](const http::Request& req, http::Response& res) {
      if (ws_.auth().authenticate(bearer(req))) return true;
      ApiReply r = handle_services_request(ws_.services(), std::nullopt, {}, req.method, req.target, "");
      send_json(res, r.body, r.status);
      return false;
    };
    for (const char* prefix : {"/api/2.0/secrets/", "/api/2.0/mlflow/"}) {
      srv_.Get(std::string(prefix) + ".*", h, {kJsonBody, any_token});
      srv_.Post(std::string(prefix) + ".*", h, {kJsonBody, any_token});
    }
  }

  http::Server& srv_;
  Workspace& ws_;
};

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

void install_files_routes(http::Server& srv, Workspace& ws) {
  install_files_routes(srv, ws.auth(), ws.volume_access(),
                       [&ws](const std::string& run_id, int attempt) { return ws.node_spec(run_id, attempt, 0); });
}

void install_routes(http::Server& srv, Workspace& ws) {
  auto api = std::make_shared<Api>(srv, ws);
  api->install();
  // The routes capture the Api by pointer: keep it alive with the server's one observer.
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
