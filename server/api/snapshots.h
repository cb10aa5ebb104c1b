// The snapshot routes: GET and PUT /api/air/v1/snapshots/{sha256} (code snapshots, streamed both ways), and
// POST .../{sha256}/adopt (the local workspace takes the CLI's cached archive without a copy).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace air::server {

namespace http { class Server; }
class Auth;
class Snapshots;

// Takes only Auth (who is calling) and Snapshots (server/workspace/snapshots.h: the blob store, uploaders and
// who may read one); max_bytes: the largest upload; adopt_from: the folder adopt takes archives from (empty:
// adopt answers 409 NOT_ADOPTED); now_ms: the clock an upload is recorded at.
void install_snapshot_routes(http::Server& srv, const Auth& auth, Snapshots& snapshots, uint64_t max_bytes,
                             std::string adopt_from, std::function<int64_t()> now_ms);

}  // namespace air::server
