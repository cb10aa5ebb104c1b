// Quotas and usage over HTTP (server/api/scheduling.h): thin handlers over Fairness.
#include "server/api/scheduling.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

#include "core/wire/api.h"
#include "core/wire/sched_api.h"
#include "server/http/server.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"
#include "server/workspace/fairness.h"

namespace air::server {

namespace {

using nlohmann::json;
using Req = http::Request;
using Res = http::Response;
using Fn = std::function<void(const Req&, Res&, const Principal&)>;

const std::string kApiPrefix = api::kPrefix;

void send(Res& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

void admin_only(const Principal& who, const std::string& what) {
  if (!who.admin)
    throw HttpError(403, "PERMISSION_DENIED",
                    fmt::format("only workspace admins (group 'admins') may {}; user '{}' is not one", what, who.user));
}

sched::Quota quota_of(const json& b, bool limits) {
  if (!b.is_object()) throw HttpError(400, "INVALID_ARGUMENT", "the request body is not a JSON object");
  api::QuotaInfo in = b.get<api::QuotaInfo>();
  auto kind = sched::quota_kind_from_string(in.kind);
  if (!kind) throw HttpError(400, "INVALID_ARGUMENT", fmt::format("kind must be 'user' or 'group', got '{}'", in.kind));
  if (in.name.empty() || in.name.find_first_of(" \t\n") != std::string::npos)
    throw HttpError(400, "INVALID_ARGUMENT", "name must be a user or group name (no spaces)");
  if (in.pool.empty()) in.pool = sched::kAllPools;
  sched::Quota q{*kind, in.name, in.pool, in.max_gpus, in.max_queued};
  if (limits) {
    if (q.max_gpus < -1 || q.max_queued < -1)
      throw HttpError(400, "INVALID_ARGUMENT", "max_gpus and max_queued are whole numbers >= 0 (-1: no limit)");
    if (q.max_gpus < 0 && q.max_queued < 0)
      throw HttpError(400, "INVALID_ARGUMENT", "a quota needs max_gpus or max_queued");
  }
  return q;
}

api::QuotaInfo info_of(const QuotaEntry& e) {
  return {sched::to_string(e.quota.kind), e.quota.name, e.quota.pool, e.quota.max_gpus, e.quota.max_queued, e.set_by,
          e.set_ms};
}

int64_t query_i64(const Req& req, const char* name, int64_t dflt) {
  if (!req.has_param(name)) return dflt;
  std::string v = req.get_param_value(name);
  try {
    size_t used = 0;
    int64_t n = std::stoll(v, &used);
    if (used == v.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  throw HttpError(400, "INVALID_ARGUMENT", fmt::format("query parameter {}={} is not a whole number >= 0", name, v));
}

class SchedulingApi : public std::enable_shared_from_this<SchedulingApi> {
 public:
  SchedulingApi(http::Server& srv, Auth& auth, Fairness& fair) : srv_(srv), auth_(auth), fair_(fair) {}

  void install() {
    on("GET", "/quotas", [this](const Req&, Res& res, const Principal&) { send(res, list()); });
    on("POST", "/quotas", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "set quotas");
      fair_.set_quota(quota_of(json::parse(req.body.empty() ? "{}" : req.body), true), who.user);
      send(res, list());
    });
    on("POST", "/quotas/delete", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "remove quotas");
      sched::Quota q = quota_of(json::parse(req.body.empty() ? "{}" : req.body), false);
      if (!fair_.remove_quota(q.kind, q.name, q.pool)) {
        bool in_file = false;
        for (const QuotaEntry& e : fair_.quotas())
          in_file = in_file || (e.set_by == "server.conf" && e.quota.kind == q.kind && e.quota.name == q.name &&
                                e.quota.pool == q.pool);
        throw HttpError(404, "NOT_FOUND",
                        in_file ? fmt::format("the quota of {} is set in server.conf; change it there", sched::quota_subject(q))
                                : fmt::format("there is no quota of {}", sched::quota_subject(q)));
      }
      send(res, list());
    });
    on("GET", "/usage", [this](const Req& req, Res& res, const Principal& who) { usage(req, res, who); });
  }

 private:
  api::QuotaList list() const {
    api::QuotaList out;
    for (const QuotaEntry& e : fair_.quotas()) out.quotas.push_back(info_of(e));
    return out;
  }

  // A user sees its own usage; admins everyone's (or one user's with ?user=).
  void usage(const Req& req, Res& res, const Principal& who) {
    api::UsageReport r;
    r.by = req.has_param("by") ? req.get_param_value("by") : "user";
    if (r.by != "user" && r.by != "group" && r.by != "pool" && r.by != "class" && r.by != "policy")
      throw HttpError(400, "INVALID_ARGUMENT", fmt::format("by must be user, group, pool, class or policy, got '{}'", r.by));
    r.since_ms = query_i64(req, "since_ms", 0);
    r.until_ms = auth_.now_ms();
    r.user = req.has_param("user") ? req.get_param_value("user") : "";
    if (!who.admin) {
      if (!r.user.empty() && r.user != who.user) admin_only(who, "read other users' usage");
      r.user = who.user;
    }
    for (const UsageTotal& t : UsageStore::totals(fair_.usage_since(r.since_ms, r.user), r.by))
      r.rows.push_back({t.key, double(t.gpu_ms) / 1000.0, double(t.wall_ms) / 1000.0, t.attempts, t.runs});
    send(res, r);
  }

  void on(const std::string& method, const std::string& path, Fn f) {
    http::Handler h = [self = shared_from_this(), this, f](const Req& req, Res& res) {
      try {
        std::string why;
        auto who = auth_.authenticate(req.get_header_value("Authorization").rfind("Bearer ", 0) == 0
                                          ? req.get_header_value("Authorization").substr(7)
                                          : std::string(),
                                      &why);
        if (!who) throw HttpError(401, "UNAUTHENTICATED", why.empty() ? "a valid token is required" : why);
        if (who->is_node()) throw HttpError(403, "PERMISSION_DENIED", "a node token may not use this API");
        f(req, res, *who);
      } catch (const HttpError& e) {
        send(res, {{"error", api::ErrorBody{e.code, e.what(), e.diagnostics}}}, e.status);
      } catch (const json::exception& e) {
        send(res, {{"error", api::ErrorBody{"INVALID_ARGUMENT", std::string("malformed JSON body: ") + e.what(), {}}}}, 400);
      }
    };
    if (method == "GET") srv_.Get(kApiPrefix + path, h);
    else srv_.Post(kApiPrefix + path, h, http::RouteOptions{1 << 16, nullptr});
  }

  http::Server& srv_;
  Auth& auth_;
  Fairness& fair_;
};

}  // namespace

void install_scheduling_routes(http::Server& srv, Auth& auth, Fairness& fair) {
  std::make_shared<SchedulingApi>(srv, auth, fair)->install();  // each handler holds it
}

}  // namespace air::server
