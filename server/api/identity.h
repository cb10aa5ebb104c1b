// The workspace's identities over Databricks' APIs: SCIM (/api/2.0/preview/scim/v2: Me, Users, Groups),
// personal access tokens (/api/2.0/token/...), the admin's token management (/api/2.0/token-management/...),
// and the audit log (/api/air/v1/audit). Errors in Databricks' shape {"error_code", "message"}.
// Who may do what: docs/security.md.
#pragma once

namespace air::server::http {
class Server;
}

namespace air::server {

class Auth;

// Takes only Auth (tokens, and the identity store behind it).
void install_identity_routes(http::Server& srv, Auth& auth);

}  // namespace air::server
