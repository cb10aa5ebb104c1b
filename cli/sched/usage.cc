// `air usage [--by user|group|pool|class|policy] [--since 7d] [--user NAME] [-o json]`: who used how many
// GPU-hours (docs/scheduler.md "Usage"). A user sees its own usage; admins everyone's.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/output.h"
#include "cli/remote.h"
#include "cli/sched/sched.h"
#include "cli/verbs.h"
#include "core/base/codec.h"
#include "core/base/error.h"
#include "core/base/time.h"
#include "core/wire/sched_api.h"

namespace air::cli {

namespace {

using nlohmann::json;

struct Args {
  std::string by = "user", since, user;
};

// Hours with two decimals; a little use is not shown as none.
std::string hours(double seconds) {
  if (seconds > 0 && seconds < 36) return "<0.01";
  return fmt::format("{:.2f}", seconds / 3600);
}

}  // namespace

void setup_usage(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("usage", "GPU-hours used, by user, group, pool, class or usage policy");
  auto a = std::make_shared<Args>();
  cmd->add_option("--by", a->by, "user (default), group, pool, class or policy");
  cmd->add_option("--since", a->since, "Only attempts that ended in the last ... (e.g. 24h, 7d)");
  cmd->add_option("--user", a->user, "Only this user's usage (admins)");
  cmd->callback([&ctx, a] {
    if (a->by != "user" && a->by != "group" && a->by != "pool" && a->by != "class" && a->by != "policy")
      throw usage_error(fmt::format("invalid --by '{}'", a->by), "use user, group, pool, class or policy");
    int64_t since_ms = 0;
    if (!a->since.empty()) {
      std::optional<int64_t> ms = parse_duration_ms(a->since, 's');
      if (!ms || *ms <= 0) throw usage_error(fmt::format("invalid --since '{}'", a->since), "use a positive number with s, m, h or d: --since 7d");
      since_ms = std::max<int64_t>(0, unix_now_ms() - *ms);
    }
    Session s = connect(ctx);
    std::string path = fmt::format("{}/usage?by={}&since_ms={}", api::kPrefix, a->by, since_ms);
    if (!a->user.empty()) path += "&user=" + percent_encode(a->user);
    json j = s.client->get_json(path);
    if (ctx.global.output == "json") return print_json(ctx, j);
    api::UsageReport r = j.get<api::UsageReport>();
    if (r.rows.empty()) {
      *ctx.out << "No usage recorded" << (a->since.empty() ? "" : " in the last " + a->since) << ".\n";
      return;
    }
    std::string header = a->by == "class" ? "CLASS" : a->by == "policy" ? "USAGE POLICY" : a->by;
    for (auto& ch : header) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    *ctx.out << fmt::format("{:<24} {:>10} {:>12} {:>9} {:>6}\n", header, "GPU-HOURS", "WALL-HOURS", "ATTEMPTS", "RUNS");
    double gpu = 0, wall = 0;
    for (const auto& row : r.rows) {
      *ctx.out << fmt::format("{:<24} {:>10} {:>12} {:>9} {:>6}\n", row.key.empty() ? "(none)" : row.key,
                              hours(row.gpu_seconds), hours(row.wall_seconds), row.attempts, row.runs);
      gpu += row.gpu_seconds, wall += row.wall_seconds;
    }
    *ctx.out << fmt::format("{:<24} {:>10} {:>12}\n", "total", hours(gpu), hours(wall));
  });
}

}  // namespace air::cli
