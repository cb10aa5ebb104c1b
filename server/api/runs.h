// The run routes of /api/air/v1: submit (POST /runs), list (GET /runs), get (GET /runs/{id}) and cancel.
#pragma once

namespace air::server {

namespace http { class Server; }
class Auth;
class Runs;

// Takes only Auth (who is calling) and Runs (server/workspace/runs.h: admission, the run table, cancel).
void install_run_routes(http::Server& srv, const Auth& auth, Runs& runs);

}  // namespace air::server
