// `air run`: validate a workload file, print the plan (--dry-run), or submit it.
#include <CLI/CLI.hpp>

#include "cli/verbs.h"
#include "core/error.h"

namespace air::cli {

void setup_run(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("run", "Validate and submit a workload");
  auto file = std::make_shared<std::string>();
  auto dry_run = std::make_shared<bool>(false);
  cmd->add_option("-f,--file", *file, "Workload YAML file")->required();
  cmd->add_flag("--dry-run", *dry_run, "Validate and print the plan; change nothing");
  cmd->callback([file, dry_run] {
    throw air::Error("air run is not built yet", "", kExitFailed);
  });
}

}  // namespace air::cli
