// The run routes (runs.h): JSON in and out; admission, access and the run table are Runs'.
#include "server/api/runs.h"

#include "core/wire/api.h"
#include "server/api/route.h"
#include "server/workspace/runs.h"

namespace air::server {

void install_run_routes(http::Server& srv, const Auth& auth, Runs& runs) {
  route::user(srv, auth, "POST", "/runs", [&runs](const auto& req, auto& res, const auto&, const Principal& who) {
    api::SubmitRequest sr = route::parse_body(req).template get<api::SubmitRequest>();
    route::send_json(res, runs.submit(sr, who), 201);
  });
  // ?all_users=1: every run the caller may view; else the caller's own.
  route::user(srv, auth, "GET", "/runs", [&runs](const auto& req, auto& res, const auto&, const Principal& who) {
    int limit = static_cast<int>(route::query_u64(req, "limit", 0));
    bool all = route::query_flag(req, "all_status"), all_users = route::query_flag(req, "all_users");
    route::send_json(res, runs.list(limit, all, who, all_users));
  });
  route::user(srv, auth, "GET", R"(/runs/([A-Za-z0-9_-]+))",
              [&runs](const auto&, auto& res, const auto& m, const Principal& who) {
                runs.require(who, m[1], RunLevel::kCanView);
                route::send_json(res, runs.get(m[1]));
              });
  route::user(srv, auth, "POST", R"(/runs/([A-Za-z0-9_-]+)/cancel)",
              [&runs](const auto&, auto& res, const auto& m, const Principal& who) {
                runs.require(who, m[1], RunLevel::kCanManageRun);
                route::send_json(res, runs.cancel(m[1]));
              });
}

}  // namespace air::server
