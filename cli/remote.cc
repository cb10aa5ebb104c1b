// Reaching the workspace (remote.h).
#include "cli/remote.h"

#include <cctype>

#include "core/client/local_daemon.h"

namespace air::cli {

Session connect(const Context& ctx) {
  Session s;
  s.target = resolve_workspace(ctx.global.profile);
  s.client = std::make_unique<Client>(s.target.url, s.target.token, s.target.ca_file);
  return s;
}

api::RunInfo fetch_run(Client& c, const std::string& run_id) {
  check_run_id(run_id);
  try {
    return c.get_json(std::string(api::kPrefix) + "/runs/" + run_id).get<api::RunInfo>();
  } catch (const ApiError& e) {
    if (e.http_status() == 404)  // an ApiError still, so that -o json reports code NOT_FOUND
      throw ApiError(404, "NOT_FOUND", "run " + run_id + " not found", {},
                     "'air list --all-status' shows the runs this workspace knows");
    throw;
  }
}

void check_run_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 64;
  for (char c : id) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  if (!ok) throw usage_error("invalid run id '" + id + "'", "run ids look like 3f9a0c21 ('air list' shows them)");
}

}  // namespace air::cli
