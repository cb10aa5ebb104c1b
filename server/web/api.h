// The routes the run page needs beyond the CLI's (docs/web.md): node logs by line range with the total line
// count, search and "first error" in a log, the whole log as a download, downsampled metric series, and the
// runs list with each run's latest loss. All take the admin bearer token, like the CLI's routes.
#pragma once

namespace air::server::http {
class Server;
}

namespace air::server {

class Auth;
class Lifecycle;
class Runs;
class WorkspaceServices;

// What the run page's routes take: who is calling, which runs they may see (Runs), the node logs (Lifecycle)
// and the MLflow metrics (services).
struct WebParts {
  const Auth& auth;
  const Runs& runs;
  Lifecycle& lifecycle;
  WorkspaceServices& services;
};

void install_web_api(http::Server& srv, WebParts parts);

}  // namespace air::server
