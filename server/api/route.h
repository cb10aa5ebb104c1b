// What every route file of /api/air/v1 shares: the bearer token, JSON replies and error bodies
// ({"error": {"code", "message", "diagnostics"}}), query numbers, body limits, and the two token gates (any
// user; the node token of the run and attempt in the path), which the server core runs before any body byte
// is read. Route files register through these and take only the workspace parts they use.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "core/base/diagnostics.h"
#include "server/http/server.h"
#include "server/workspace/access.h"

namespace air::server {

class Auth;

namespace route {

// Body limits per route, enforced from the headers before the body is read.
inline constexpr uint64_t kJsonBody = 1 << 20;
inline constexpr uint64_t kLogBody = 8 << 20;

// The token of `Authorization: Bearer <token>`, or "".
std::string bearer(const http::Request& req);
void send_json(http::Response& res, const nlohmann::json& j, int status = 200);
void send_error(http::Response& res, int status, const std::string& code, const std::string& message,
                const std::vector<Diagnostic>& diags = {}, nlohmann::json extra = nlohmann::json::object());
// The query parameter as a number (dflt when absent); 400 INVALID_ARGUMENT when it is not one.
uint64_t query_u64(const http::Request& req, const char* name, uint64_t dflt);
// ?name=1 or ?name=true.
bool query_flag(const http::Request& req, const char* name);
// The body as JSON; 400 INVALID_ARGUMENT when it is not.
nlohmann::json parse_body(const http::Request& req);
// The caller; 401 UNAUTHENTICATED without a valid token.
Principal authenticate(const Auth& auth, const http::Request& req);

using Match = std::smatch;
using Handler = std::function<void(const http::Request&, http::Response&, const Match&)>;
using UserHandler = std::function<void(const http::Request&, http::Response&, const Match&, const Principal&)>;

// /api/air/v1<pattern> for any user's token (a node token is refused: 403); what the user may do is the
// handler's check (access.h).
void user(http::Server& srv, const Auth& auth, const std::string& method, const std::string& pattern, UserHandler h);
// /api/air/v1/runs/{run}/attempts/{attempt}/nodes/{node}<suffix> for the node token of that very run and
// attempt (or an admin's token).
void node(http::Server& srv, const Auth& auth, const std::string& method, const std::string& suffix, Handler h,
          uint64_t max_body = kJsonBody);
// The gate user() puts on its routes.
http::Gate user_gate(const Auth& auth);

}  // namespace route
}  // namespace air::server
