// The scheduling routes under /api/air/v1/: quotas (GET for every user; POST /quotas and /quotas/delete for
// admins) and usage (GET /usage: a user's own; every user's, and another user's, for admins). Takes only
// Auth (who asks) and the workspace's Fairness part. docs/scheduler.md, docs/security.md.
#pragma once

namespace air::server::http {
class Server;
}

namespace air::server {

class Auth;
class Fairness;

void install_scheduling_routes(http::Server& srv, Auth& auth, Fairness& fair);

}  // namespace air::server
