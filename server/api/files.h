// Databricks' Files API (/api/2.0/fs/files{path}, /api/2.0/fs/directories{path}) over the workspace's
// volumes (server/store/volumes.h), with Databricks' status codes and {"error_code", "message"} bodies.
#pragma once
#include <functional>
#include <string>

#include "core/wire/api.h"

namespace air::server::http {
class Server;
}

namespace air::server {

class Auth;
class VolumeAccess;

// A node token's node spec (its run's volumes and snapshot path): Lifecycle::node_spec(run, attempt, 0).
using NodeSpecOf = std::function<api::NodeSpec(const std::string& run_id, int attempt)>;

// Registers the routes, which take only Auth (who is calling), VolumeAccess (owners and grants: a user
// needs READ_VOLUME to read and WRITE_VOLUME to change) and, for a node token, its node spec (only paths
// inside the volumes its run's workload names: NodeSpec::volumes); docs/volumes.md.
void install_files_routes(http::Server& srv, Auth& auth, VolumeAccess& volumes, NodeSpecOf node_spec);

}  // namespace air::server
