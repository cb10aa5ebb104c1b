// Databricks' Files API (/api/2.0/fs/files{path}, /api/2.0/fs/directories{path}) over the workspace's
// volumes (server/store/volumes.h), with Databricks' status codes and {"error_code", "message"} bodies.
#pragma once

namespace air::server::http {
class Server;
}

namespace air::server {

class Workspace;

// Registers the routes. Who may do what: any user token everything (volume grants: not yet); a node token only paths inside the
// volumes its run's workload names (NodeSpec::volumes); docs/volumes.md.
void install_files_routes(http::Server& srv, Workspace& ws);

}  // namespace air::server
