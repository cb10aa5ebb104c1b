// The node routes of /api/air/v1/runs/{run}/attempts/{attempt}/nodes/{node}: the agents' (spec, status, log
// appends, with the node token of that run and attempt) and the readers' log follow (GET .../logs).
#pragma once

namespace air::server {

namespace http { class Server; }
class Auth;
class Lifecycle;
class Runs;

// Takes Auth (who is calling), the Lifecycle (the attempt's nodes and logs) and Runs (only to check that a
// reader may view the run).
void install_node_routes(http::Server& srv, const Auth& auth, Lifecycle& lifecycle, const Runs& runs);

}  // namespace air::server
