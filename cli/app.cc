// Builds the `air` command tree and turns every failure into one rendered error and a stable exit code.
#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <sstream>

#include "cli/completion/completion.h"
#include "cli/output.h"
#include "cli/run/submit.h"
#include "cli/run/secret_check.h"
#include "cli/secrets.h"
#include "cli/verbs.h"
#include "core/base/error.h"

namespace air::cli {

namespace {

void render_error(std::ostream& err, const air::Error& e) {
  err << "air: error: " << e.what() << "\n";
  if (!e.hint().empty()) err << "  hint: " << e.hint() << "\n";
}

void build_app(CLI::App& app, Context& ctx) {
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("air ") + AIR_VERSION);
  app.add_option("-o,--output", ctx.global.output, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  app.add_option("-p,--profile", ctx.global.profile,
                 "Profile of ~/.databrickscfg or ~/.air/config (default: DATABRICKS_CONFIG_PROFILE, see 'air auth')");
  app.add_option("--color", ctx.global.color, "Colour: auto (a terminal, and NO_COLOR unset), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->default_val("auto");
  app.add_flag("--debug", ctx.global.debug, "Print debugging details");

  setup_run(app, ctx);
  setup_get(app, ctx);
  setup_logs(app, ctx);
  setup_list(app, ctx);
  setup_cancel(app, ctx);
  setup_server(app, ctx);
  setup_node(app, ctx);
  setup_secrets(app, ctx);
  setup_ui(app, ctx);
  setup_completion(app, ctx);
  setup_fs(app, ctx);
  setup_auth(app, ctx);
  setup_team(app, ctx);
  // Global flags may follow the verb too (`air get run ID -o json`), as users of kubectl and gh expect.
  std::function<void(CLI::App*)> allow_globals_after = [&](CLI::App* a) {
    for (auto* sub : a->get_subcommands({})) {
      sub->fallthrough();
      allow_globals_after(sub);
    }
  };
  allow_globals_after(&app);
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Context ctx;
  ctx.out = &out;
  ctx.err = &err;
  // The name makes every usage line read `Usage: air ...`, also when air is called through a path.
  CLI::App app{"air: run ML training workloads on one machine or many", "air"};
  build_app(app, ctx);

  // `air __complete WORDS...` answers the completion scripts (cli/completion/completion.h); never a parse error.
  if (args.size() >= 2 && args[1] == "__complete")
    return run_complete(app, std::vector<std::string>(args.begin() + 2, args.end()), ctx);

  // `air run -h config.<path>` is field help, not CLI11's -h flag.
  if (int code = 0; run_field_help(args, ctx, &code)) return code;

  std::vector<std::string> rev(args.rbegin(), args.rend());
  if (!rev.empty()) rev.pop_back();  // program name
  try {
    try {
      app.parse(rev);
    } catch (const CLI::CallForHelp&) {
      out << app.help();
      return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
      out << app.help("", CLI::AppFormatMode::All);
      return kExitOk;
    } catch (const CLI::CallForVersion&) {
      out << "air " << AIR_VERSION << "\n";
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      err << "air: error: " << e.what() << "\n  hint: run 'air --help' for usage\n";
      return kExitUsage;
    }
    if (app.get_subcommands().empty()) {
      out << app.help();
      return kExitUsage;
    }
  } catch (const air::Error& e) {
    // -o json: the error envelope on stdout, where a script reads (the text still goes to stderr).
    if (ctx.global.output == "json") out << error_envelope_text(e) << "\n";
    render_error(err, e);
    return e.exit_code();
  } catch (const std::exception& e) {
    err << "air: error: " << e.what() << "\n";
    return kExitFailed;
  }
  return ctx.exit_code;
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return run_cli(args, std::cout, std::cerr);
}

}  // namespace air::cli
