// `air ui [--open] [--token]`: the URL of the workspace's web page (docs/web.md); `air get run <id> --web`
// prints (and opens) one run's page through web_url() below.
#include <CLI/CLI.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "cli/format.h"
#include "cli/remote.h"
#include "cli/verbs.h"
#include "core/base/error.h"

extern char** environ;

namespace air::cli {

std::string web_url(const std::string& workspace_url, const std::string& run_id) {
  std::string base = workspace_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + (run_id.empty() ? "" : "#/runs/" + run_id);
}

// Opens `url` with the desktop's browser (xdg-open, or $BROWSER); false when none could be started.
bool open_in_browser(const std::string& url) {
  const char* env = std::getenv("BROWSER");
  std::string prog = env && *env ? env : "xdg-open";
  std::vector<char*> argv = {prog.data(), const_cast<char*>(url.c_str()), nullptr};
  pid_t pid = 0;
  if (::posix_spawnp(&pid, prog.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return false;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Prints the page's URL, opens it when asked (a failure to open is a hint, not an error: the URL is there).
void show_web_page(Context& ctx, const std::string& url, bool open) {
  *ctx.out << url << "\n";
  if (open && !open_in_browser(url))
    *ctx.err << "air: could not start a browser (xdg-open or $BROWSER); open the URL above yourself\n";
}

void setup_ui(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("ui", "Print (or open) the URL of the workspace's web page");
  auto open = std::make_shared<bool>(false);
  auto token = std::make_shared<bool>(false);
  cmd->add_flag("--open", *open, "Open the page in the desktop's browser");
  cmd->add_flag("--token", *token, "Also print the workspace token the page asks for at sign-in");
  cmd->callback([&ctx, open, token] {
    Session s = connect(ctx);
    show_web_page(ctx, web_url(s.target.url, ""), *open);
    if (*token) *ctx.out << s.target.token << "\n";
    else if (stdout_is_tty())
      *ctx.err << "  sign in with the workspace token: air ui --token (it stays in the browser tab only)\n";
  });
}

}  // namespace air::cli
