// The node routes (nodes.h). A log follower with nothing new waits without a thread: the response is
// deferred until the log grows (LogStore wakes the server) or wait_ms passes; the one long-poll of node logs
// (the run page's line reads defer the same way, server/web/api.cc).
#include "server/api/nodes.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/wire/api.h"
#include "server/api/route.h"
#include "server/workspace/auth.h"
#include "server/workspace/lifecycle.h"
#include "server/workspace/runs.h"

namespace air::server {

namespace {

void send_log(http::Response& res, LogRead& r) {
  res.set_header(api::kHeaderLogOffset, std::to_string(r.chunk.offset));
  res.set_header(api::kHeaderLogSize, std::to_string(r.chunk.size));
  res.set_header(api::kHeaderLogDone, r.done ? "1" : "0");
  res.set_content(std::move(r.chunk.data), "application/octet-stream");
}

}  // namespace

void install_node_routes(http::Server& srv, const Auth& auth, Lifecycle& lifecycle, const Runs& runs) {
  route::node(srv, auth, "GET", "/spec", [&lifecycle](const auto&, auto& res, const auto& m) {
    route::send_json(res, lifecycle.node_spec(m[1], std::stoi(m[2]), std::stoi(m[3])));
  });
  route::node(srv, auth, "POST", "/status", [&lifecycle](const auto& req, auto& res, const auto& m) {
    auto rep = route::parse_body(req).template get<api::NodeStatusReport>();
    route::send_json(res, lifecycle.node_status(m[1], std::stoi(m[2]), std::stoi(m[3]), rep));
  });
  route::node(srv, auth, "POST", "/logs", [&lifecycle](const auto& req, auto& res, const auto& m) {
    uint64_t offset = route::query_u64(req, "offset", 0);
    auto r = lifecycle.append_log(m[1], std::stoi(m[2]), std::stoi(m[3]), offset, req.body);
    if (r.gap)
      route::send_error(res, 409, "LOG_GAP",
                        fmt::format("offset {} is beyond the stored log ({} bytes); resend from {}", offset, r.size, r.size),
                        {}, nlohmann::json{{"size", r.size}});
    else
      route::send_json(res, api::LogAppendReply{r.size});
  }, route::kLogBody);
  route::user(srv, auth, "GET", R"(/runs/([A-Za-z0-9_-]+)/attempts/(\d{1,6})/nodes/(\d{1,6})/logs)",
              [&auth, &lifecycle, &runs](const auto& req, auto& res, const auto& m, const Principal& who) {
    runs.require(who, m[1], RunLevel::kCanView);
    std::optional<uint64_t> offset, tail;
    if (req.has_param("offset")) offset = route::query_u64(req, "offset", 0);
    if (req.has_param("tail")) tail = route::query_u64(req, "tail", 0);
    uint64_t max_bytes = std::min<uint64_t>(route::query_u64(req, "max_bytes", 4 << 20), 64 << 20);
    auto wait = std::chrono::milliseconds(std::min<uint64_t>(route::query_u64(req, "wait_ms", 0), 30000));
    std::string run = m[1];
    int attempt = std::stoi(m[2]), node = std::stoi(m[3]);
    LogRead r = lifecycle.read_log(run, attempt, node, offset, tail, max_bytes);
    uint64_t from = r.chunk.offset;
    bool ready = !r.chunk.data.empty() || r.done || wait.count() == 0;
    send_log(res, r);
    if (ready) return;
    std::string token = route::bearer(req);
    res.defer(std::chrono::steady_clock::now() + wait,
              [&auth, &lifecycle, run, attempt, node, from, max_bytes, token](auto& res) {
      // A follower whose token is revoked or expires meanwhile is answered 401 at once.
      std::string why;
      if (!auth.authenticate(token, &why)) {
        res = http::Response();
        route::send_error(res, 401, "UNAUTHENTICATED", why);
        return true;
      }
      LogRead r = lifecycle.read_log(run, attempt, node, from, std::nullopt, max_bytes);
      bool ready = !r.chunk.data.empty() || r.done;
      send_log(res, r);
      return ready;
    });
  });
}

}  // namespace air::server
