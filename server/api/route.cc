// The route kit (route.h).
#include "server/api/route.h"

#include <fmt/format.h>

#include "core/wire/api.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"

namespace air::server::route {

using nlohmann::json;

std::string bearer(const http::Request& req) {
  auto h = req.get_header_value("Authorization");
  return h.rfind("Bearer ", 0) == 0 ? h.substr(7) : std::string();
}

void send_json(http::Response& res, const json& j, int status) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

void send_error(http::Response& res, int status, const std::string& code, const std::string& message,
                const std::vector<Diagnostic>& diags, json extra) {
  api::ErrorBody b{code, message, diags};
  extra["error"] = b;
  res.status = status;
  res.set_content(extra.dump(), "application/json");
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

bool query_flag(const http::Request& req, const char* name) {
  return req.get_param_value(name) == "1" || req.get_param_value(name) == "true";
}

json parse_body(const http::Request& req) {
  try {
    return json::parse(req.body);
  } catch (const json::exception&) {
    throw HttpError(400, "INVALID_ARGUMENT", "the request body is not valid JSON");
  }
}

Principal authenticate(const Auth& auth, const http::Request& req) {
  std::string why;
  auto p = auth.authenticate(bearer(req), &why);
  if (!p) throw HttpError(401, "UNAUTHENTICATED", why);
  return *p;
}

namespace {

void add(http::Server& srv, const std::string& method, const std::string& pattern, Handler h, http::RouteOptions o) {
  auto wrapped = [h](const http::Request& req, http::Response& res) { h(req, res, req.matches); };
  std::string p = api::kPrefix + pattern;
  if (method == "GET") srv.Get(p, wrapped, std::move(o));
  else if (method == "POST") srv.Post(p, wrapped, std::move(o));
}

// Node endpoints accept the node token of that very run and attempt (or an admin's token).
http::Gate node_gate(const Auth& auth) {
  return [&auth](const http::Request& req, http::Response&) {
    Principal p = authenticate(auth, req);
    if (p.admin) return true;
    if (!p.is_node())
      throw HttpError(403, "PERMISSION_DENIED", "only the run's node token (or an admin) may use node endpoints");
    if (p.run_id != req.matches[1].str() || p.attempt != std::stoi(req.matches[2].str()))
      throw HttpError(403, "PERMISSION_DENIED", "this node token belongs to another run or attempt");
    return true;
  };
}

}  // namespace

http::Gate user_gate(const Auth& auth) {
  return [&auth](const http::Request& req, http::Response&) {
    if (authenticate(auth, req).is_node())
      throw HttpError(403, "PERMISSION_DENIED", "a node token may use only its own attempt's node endpoints");
    return true;
  };
}

void user(http::Server& srv, const Auth& auth, const std::string& method, const std::string& pattern, UserHandler h) {
  add(srv, method, pattern,
      [&auth, h](const auto& req, auto& res, const auto& m) { h(req, res, m, authenticate(auth, req)); },
      {kJsonBody, user_gate(auth)});
}

void node(http::Server& srv, const Auth& auth, const std::string& method, const std::string& suffix, Handler h,
          uint64_t max_body) {
  std::string pattern = R"(/runs/([A-Za-z0-9_-]+)/attempts/(\d{1,6})/nodes/(\d{1,6}))" + suffix;
  add(srv, method, pattern, std::move(h), {max_body, node_gate(auth)});
}

}  // namespace air::server::route
