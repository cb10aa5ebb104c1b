// Unity Catalog's volume and permissions routes (docs/volumes.md, docs/security.md): list and describe the
// volumes a caller may read, and read or change who holds READ_VOLUME / WRITE_VOLUME on one.
#pragma once

namespace air::server {

namespace http { class Server; }
class Auth;
class VolumeAccess;

// Takes only Auth (who is calling) and VolumeAccess (volume owners and grants).
void install_unity_catalog_routes(http::Server& srv, Auth& auth, VolumeAccess& volumes);

}  // namespace air::server
