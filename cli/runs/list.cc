// `air list` (also `air list runs`): the runs of the workspace, newest first; active ones unless
// --all-status; --filter user=EMAIL|experiment=GLOB|status=S|accelerator_type=SUBSTR|num_accelerators=N.
// Your runs by default (the runs the token's user submitted); --all-users: every run you may view.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fnmatch.h>

#include "cli/output.h"
#include "cli/format.h"
#include "cli/remote.h"
#include "cli/verbs.h"
#include "core/base/error.h"

namespace air::cli {

namespace {

struct Filter {
  std::string key, value;
};

std::vector<Filter> parse_filters(const std::vector<std::string>& raw) {
  std::vector<Filter> out;
  for (const auto& f : raw) {
    auto eq = f.find('=');
    if (eq == std::string::npos || eq == 0)
      throw usage_error("invalid --filter '" + f + "': expected KEY=VALUE", "e.g. --filter experiment='sft-*'");
    Filter x{f.substr(0, eq), f.substr(eq + 1)};
    if (x.key != "user" && x.key != "experiment" && x.key != "status" && x.key != "accelerator_type" &&
        x.key != "num_accelerators")
      throw usage_error("unsupported --filter key \"" + x.key +
                        "\": supported keys are accelerator_type, experiment, num_accelerators, status, user");
    if (x.key == "num_accelerators" && (x.value.empty() || x.value.find_first_not_of("0123456789") != std::string::npos ||
                                        std::stol(x.value) <= 0))
      throw usage_error("invalid --filter num_accelerators=" + x.value + ": must be a positive integer");
    out.push_back(x);
  }
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool matches(const api::RunInfo& r, const std::vector<Filter>& fs) {
  for (const auto& f : fs) {
    if (f.key == "user" && f.value != r.user) return false;
    if (f.key == "experiment" && fnmatch(f.value.c_str(), r.experiment_name.c_str(), FNM_CASEFOLD) != 0) return false;
    if (f.key == "status" && lower(f.value) != lower(r.state)) return false;
    if (f.key == "accelerator_type" && lower(r.accelerator_type).find(lower(f.value)) == std::string::npos) return false;
    if (f.key == "num_accelerators" && f.value != std::to_string(r.num_accelerators)) return false;
  }
  return true;
}

}  // namespace

void setup_list(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("list", "List runs: air list [runs]");
  auto what = std::make_shared<std::string>();
  auto limit = std::make_shared<int>(20);
  auto all = std::make_shared<bool>(false);
  auto filters = std::make_shared<std::vector<std::string>>();
  cmd->add_option("what", *what, "runs (the default)");
  auto all_users = std::make_shared<bool>(false);
  cmd->add_option("--limit", *limit, "Maximum number of runs to show (default 20, must be > 0)");
  cmd->add_flag("--all-status", *all, "Show runs in all states (default: active only)");
  cmd->add_flag("--all-users", *all_users,
                "Show every user's runs you may view (default: your own)");
  cmd->add_option("--filter", *filters,
                  "Filter runs, e.g. experiment=foo* (repeatable): user, experiment (glob), accelerator_type, "
                  "num_accelerators, status");
  cmd->callback([&ctx, what, limit, all, filters, all_users] {
    if (!what->empty() && *what != "runs") throw usage_error("air list knows 'runs' only, not '" + *what + "'");
    if (*limit <= 0) throw usage_error("invalid --limit " + std::to_string(*limit) + ": must be > 0");
    auto fs = parse_filters(*filters);
    // A status filter for a finished state needs finished runs too.
    bool all_status = *all;
    for (const auto& f : fs) all_status = all_status || (f.key == "status" && is_run_terminal(f.value));
    Session s = connect(ctx);
    // A user filter for someone else needs every user's runs.
    bool every_user = *all_users;
    for (const auto& f : fs) every_user = every_user || f.key == "user";
    // Without filters the workspace sends the newest --limit runs only (it sorts them); filters are applied
    // here, so they need every run the caller may see (with 100,000 runs: 2.4 s and 41 MB against 0.05 s).
    std::string path = std::string(api::kPrefix) + "/runs?all_status=" + (all_status ? "1" : "0") +
                       "&all_users=" + (every_user ? "1" : "0") + (fs.empty() ? "&limit=" + std::to_string(*limit) : "");
    auto list = s.client->get_json(path).get<api::RunList>();
    std::vector<api::RunInfo> rows;
    for (auto& r : list.runs)
      if (matches(r, fs) && static_cast<int>(rows.size()) < *limit) rows.push_back(std::move(r));
    if (ctx.global.output == "json") {
      // The reference's fields (run_id, run_name, user, status, started_at, is_sweep), then ours.
      nlohmann::json j = nlohmann::json::array();
      for (const auto& r : rows)
        j.push_back({{"run_id", r.run_id}, {"run_name", r.experiment_name}, {"user", r.user},
                     {"status", r.state}, {"started_at", r.started_at_ms ? nlohmann::json(format_iso(r.started_at_ms))
                                                                         : nlohmann::json(nullptr)},
                     {"is_sweep", false}, {"experiment_name", r.experiment_name},
                     {"submitted_at", format_iso(r.submitted_at_ms)}, {"duration_ms", run_duration_ms(r, now_ms())},
                     {"accelerator_type", r.accelerator_type}, {"num_accelerators", r.num_accelerators},
                     {"num_nodes", r.num_nodes}, {"attempts", r.attempts.size()},
                     {"queue_position", r.queue_position},
                     {"estimated_start_ms", r.estimated_start_ms ? nlohmann::json(*r.estimated_start_ms) : nullptr}});
      print_json(ctx, {{"runs", j}});
      return;
    }
    if (rows.empty()) {
      *ctx.out << (all_status ? "No runs found.\n" : "No active runs. (--all-status shows finished ones)\n");
      return;
    }
    auto line = [&](auto... a) { *ctx.out << fmt::format("{:<10}{:<24}{:<13}{:<21}{:<11}{:<8}{}\n", a...); };
    if (*all_users) {  // whose runs: a column only when they may be someone else's
      auto row = [&](auto... a) { *ctx.out << fmt::format("{:<10}{:<16}{:<24}{:<13}{:<21}{:<11}{:<8}{}\n", a...); };
      row("RUN ID", "USER", "EXPERIMENT", "STATUS", "SUBMITTED", "DURATION", "TRIES", "ACCELERATORS");
      for (const auto& r : rows)
        row(r.run_id, r.user.size() > 15 ? r.user.substr(0, 14) + "~" : r.user,
            r.experiment_name.size() > 23 ? r.experiment_name.substr(0, 22) + "~" : r.experiment_name,
            r.queue_position ? fmt::format("{} #{}", r.state, r.queue_position) : r.state, format_time(r.submitted_at_ms).substr(0, 19),
            r.started_at_ms ? format_duration(run_duration_ms(r, now_ms())) : std::string("-"), r.attempts.size(),
            fmt::format("{} x {}", r.num_accelerators, r.accelerator_type));
      return;
    }
    line("RUN ID", "EXPERIMENT", "STATUS", "SUBMITTED", "DURATION", "TRIES", "ACCELERATORS");
    for (const auto& r : rows)
      line(r.run_id, r.experiment_name.size() > 23 ? r.experiment_name.substr(0, 22) + "~" : r.experiment_name,
           r.queue_position ? fmt::format("{} #{}", r.state, r.queue_position) : r.state,  // #: place in its queue
           format_time(r.submitted_at_ms).substr(0, 19),
           r.started_at_ms ? format_duration(run_duration_ms(r, now_ms())) : std::string("-"), r.attempts.size(),
           fmt::format("{} x {}", r.num_accelerators, r.accelerator_type));
  });
}

}  // namespace air::cli
