// The verbs of `air`, one file each. Each setup_* adds its subcommand to the app and sets the callback.
#pragma once
#include <iosfwd>
#include <string>

#include "cli/app.h"

namespace CLI { class App; }

namespace air::cli {

struct Context {
  GlobalOptions global;
  std::ostream* out;
  std::ostream* err;
  int exit_code = 0;  // set by a verb when it succeeded but must exit non-zero (e.g. --watch of a FAILED run)
};

void setup_run(CLI::App& app, Context& ctx);
// The workspace verbs (helper `server`).
void setup_get(CLI::App& app, Context& ctx);
void setup_logs(CLI::App& app, Context& ctx);
void setup_list(CLI::App& app, Context& ctx);
void setup_cancel(CLI::App& app, Context& ctx);
void setup_server(CLI::App& app, Context& ctx);
// `air node`, the node agent (helper `agent`).
void setup_node(CLI::App& app, Context& ctx);
// `air ui` and the run page's URL (cli/ui.cc; `air get run <id> --web`).
void setup_ui(CLI::App& app, Context& ctx);
std::string web_url(const std::string& workspace_url, const std::string& run_id);
void show_web_page(Context& ctx, const std::string& url, bool open);
// `air fs`, the workspace's volumes (helper `volumes`).
void setup_fs(CLI::App& app, Context& ctx);
// `air volumes list|grants|grant|revoke`: volume owners and grants (cli/volumes.cc).
void setup_volumes(CLI::App& app, Context& ctx);
// `air auth profiles|login`: the profiles every verb may use (cli/auth.cc).
void setup_auth(CLI::App& app, Context& ctx);
// `air users`, `air groups`, `air tokens`, `air audit`: a workspace a team shares (cli/team.cc).
void setup_team(CLI::App& app, Context& ctx);

}  // namespace air::cli
