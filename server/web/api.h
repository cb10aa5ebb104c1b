// The routes the run page needs beyond the CLI's (docs/web.md): node logs by line range with the total line
// count, search and "first error" in a log, the whole log as a download, downsampled metric series, and the
// runs list with each run's latest loss. All take the admin bearer token, like the CLI's routes.
#pragma once

namespace air::server::http {
class Server;
}

namespace air::server {

class Workspace;

void install_web_api(http::Server& srv, Workspace& ws);

}  // namespace air::server
