// `air cancel <id>...` or `air cancel --all [-y]`: stops every process of the runs (agents stop their
// commands' process groups; what does not exit within the grace period is killed).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "cli/output.h"
#include "cli/remote.h"
#include "cli/verbs.h"
#include "core/base/error.h"

namespace air::cli {

void setup_cancel(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("cancel", "Cancel runs: air cancel <id>... | --all [-y]");
  auto ids = std::make_shared<std::vector<std::string>>();
  auto all = std::make_shared<bool>(false);
  auto yes = std::make_shared<bool>(false);
  cmd->add_option("ids", *ids, "Run ids")->type_name("RUN_ID");
  cmd->add_flag("--all", *all, "Cancel all of your active runs");
  cmd->add_flag("-y,--yes", *yes, "Skip the confirmation prompt");
  cmd->callback([&ctx, ids, all, yes] {
    if (*all && !ids->empty()) throw usage_error("cannot combine JOB_RUN_ID arguments with --all");
    if (!*all && ids->empty()) throw usage_error("provide at least one JOB_RUN_ID, or use --all");
    for (const auto& id : *ids) check_run_id(id);
    Session s = connect(ctx);
    bool json_out = ctx.global.output == "json";
    std::vector<std::string> targets = *ids;
    if (*all) {
      auto list = s.client->get_json(std::string(api::kPrefix) + "/runs").get<api::RunList>();
      for (const auto& r : list.runs) targets.push_back(r.run_id);
      if (targets.empty()) {
        if (json_out) print_json(ctx, {{"cancelled", nlohmann::json::array()}, {"all", true}, {"workspace", s.target.url}});
        else *ctx.out << "No active runs to cancel in " << s.target.url << ".\n";
        return;
      }
      // The preview: what --all is about to cancel (on stderr, so -o json's stdout stays one document).
      *ctx.err << fmt::format("{:<10}  {:<28}  {:<10}  {}\n", "Run ID", "Experiment", "Status", "Accelerators");
      for (const auto& r : list.runs)
        *ctx.err << fmt::format("{:<10}  {:<28}  {:<10}  {} x {}\n", r.run_id, r.experiment_name, r.state,
                                r.num_accelerators, r.accelerator_type);
      if (!*yes) {
        if (!::isatty(0))
          throw usage_error("cancel --all needs confirmation", "pass -y to cancel without asking");
        *ctx.err << "Cancel " << targets.size() << " run(s) in " << s.target.url << "? [y/N] " << std::flush;
        std::string answer;
        std::getline(std::cin, answer);
        if (answer.empty() || (answer[0] != 'y' && answer[0] != 'Y')) {
          *ctx.err << "Cancellation aborted.\n";
          ctx.exit_code = kExitFailed;
          return;
        }
      }
    }
    nlohmann::json cancelled = nlohmann::json::array(), failed = nlohmann::json::array();
    for (const auto& id : targets) {
      try {
        auto rep = s.client->post_json(std::string(api::kPrefix) + "/runs/" + id + "/cancel", nlohmann::json::object())
                       .get<api::CancelReply>();
        cancelled.push_back(id);
        if (!json_out) {
          if (rep.already_terminal) *ctx.err << "Run " << id << " had already ended (" << rep.state << ")\n";
          else *ctx.err << "Successfully requested cancellation for run " << id << "\n";
        }
      } catch (const ApiError& e) {
        // An unknown run: the reference CLI's sentence, as it prints it (docs/cli.md). Any other refusal (another
        // user's run, a 403) is an error of ours and reads like every other one: `air: error: ...`.
        const bool unknown = e.http_status() == 404;
        std::string msg = unknown ? "Run " + id + " not found. Please check the run ID and ensure you're using a Job Run ID."
                                  : std::string(e.what());
        failed.push_back({{"run_id", id}, {"error", msg}});
        if (!json_out) *ctx.err << (unknown ? "" : "air: error: ") << msg << "\n";
      }
    }
    if (json_out) {
      nlohmann::json j{{"cancelled", cancelled}};
      if (*all) j["all"] = true;
      if (!failed.empty()) j["failed"] = failed;
      print_json(ctx, j);
    } else if (cancelled.size() > 1) {
      *ctx.err << "Successfully requested cancellation for " << cancelled.size() << " run(s).\n";
    }
    if (!failed.empty()) ctx.exit_code = kExitFailed;
  });
}

}  // namespace air::cli
