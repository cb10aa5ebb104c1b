// `air cancel <id>...` or `air cancel --all [-y]`: stops every process of the runs (agents stop their
// commands' process groups; what does not exit within the grace period is killed).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <iostream>

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
  cmd->add_flag("--all", *all, "Cancel every active run");
  cmd->add_flag("-y,--yes", *yes, "Do not ask for confirmation (with --all)");
  cmd->callback([&ctx, ids, all, yes] {
    if (*all && !ids->empty()) throw usage_error("give run ids or --all, not both");
    if (!*all && ids->empty()) throw usage_error("nothing to cancel", "give run ids, or --all for every active run");
    for (const auto& id : *ids) check_run_id(id);
    Session s = connect(ctx);
    bool json_out = ctx.global.output == "json";
    std::vector<std::string> targets = *ids;
    if (*all) {
      auto list = s.client->get_json(std::string(api::kPrefix) + "/runs").get<api::RunList>();
      for (const auto& r : list.runs) targets.push_back(r.run_id);
      if (targets.empty()) {
        if (json_out) *ctx.out << nlohmann::json{{"cancelled", nlohmann::json::array()}, {"all", true}}.dump() << "\n";
        else *ctx.out << "No active runs to cancel.\n";
        return;
      }
      if (!*yes) {
        if (!::isatty(0))
          throw usage_error("cancel --all needs confirmation", "pass -y to cancel without asking");
        *ctx.err << "Cancel " << targets.size() << " run(s) in the " << s.target.source << "? [y/N] " << std::flush;
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
          if (rep.already_terminal) *ctx.out << "Run " << id << " had already ended (" << rep.state << ")\n";
          else *ctx.out << "Requested cancellation of run " << id << "\n";
        }
      } catch (const ApiError& e) {
        std::string msg = e.http_status() == 404 ? "run " + id + " not found" : e.what();
        failed.push_back({{"run_id", id}, {"error", msg}});
        if (!json_out) *ctx.err << "air: error: " << msg << "\n";
      }
    }
    if (json_out) {
      nlohmann::json j{{"cancelled", cancelled}};
      if (*all) j["all"] = true;
      if (!failed.empty()) j["failed"] = failed;
      *ctx.out << j.dump() << "\n";
    } else if (cancelled.size() > 1) {
      *ctx.out << "Requested cancellation of " << cancelled.size() << " run(s).\n";
    }
    if (!failed.empty()) ctx.exit_code = kExitFailed;
  });
}

}  // namespace air::cli
