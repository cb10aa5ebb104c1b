// `air quotas set|list|rm`: GPUs at once and runs queued per user or group, per pool (docs/scheduler.md
// "Quotas"). Everyone may list them; admins set and remove them. server.conf's [quotas] show beside them.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/output.h"
#include "cli/remote.h"
#include "cli/sched/sched.h"
#include "cli/verbs.h"
#include "core/base/error.h"
#include "core/wire/sched_api.h"

namespace air::cli {

namespace {

using nlohmann::json;

const std::string kQuotas = std::string(api::kPrefix) + "/quotas";

std::string limit(int n) { return n < 0 ? "-" : std::to_string(n); }

void print_quotas(const Context& ctx, const json& j) {
  if (ctx.global.output == "json") return print_json(ctx, j);
  api::QuotaList l = j.get<api::QuotaList>();
  if (l.quotas.empty()) {
    *ctx.out << "No quotas: every user and group may use every GPU of its pool.\n";
    return;
  }
  *ctx.out << fmt::format("{:<6} {:<24} {:<12} {:>6} {:>7}  {}\n", "KIND", "NAME", "POOL", "GPUS", "QUEUED", "SET BY");
  for (const auto& q : l.quotas)
    *ctx.out << fmt::format("{:<6} {:<24} {:<12} {:>6} {:>7}  {}\n", q.kind, q.name, q.pool == "*" ? "(all)" : q.pool,
                            limit(q.max_gpus), limit(q.max_queued), q.set_by);
}

struct Args {
  std::string kind, name, pool = "*";
  int gpus = -1, queued = -1;
};

void check_kind(const std::string& kind) {
  if (kind != "user" && kind != "group")
    throw usage_error(fmt::format("'{}' is not user or group", kind), "air quotas set group ml-research --gpus 16");
}

}  // namespace

void setup_quotas(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("quotas", "GPU and queued-run quotas per user or group (admins set them)");
  cmd->require_subcommand(1);
  auto a = std::make_shared<Args>();
  auto* list = cmd->add_subcommand("list", "List the quotas (admin-set ones and server.conf's)");
  list->callback([&ctx] {
    Session s = connect(ctx);
    print_quotas(ctx, s.client->get_json(kQuotas));
  });
  auto* set = cmd->add_subcommand("set", "Hold a user or group to N GPUs at once and/or N queued runs");
  set->add_option("KIND", a->kind, "user or group")->required();
  set->add_option("NAME", a->name, "the user's or group's name")->required();
  set->add_option("--gpus", a->gpus, "GPUs its runs may hold at once");
  set->add_option("--queued", a->queued, "runs it may have waiting at once");
  set->add_option("--pool", a->pool, "only in this pool (default: every pool together)");
  set->callback([&ctx, a] {
    check_kind(a->kind);
    if (a->gpus < 0 && a->queued < 0)
      throw usage_error("a quota needs --gpus or --queued", "air quotas set group ml-research --gpus 16");
    Session s = connect(ctx);
    api::QuotaInfo q{a->kind, a->name, a->pool, a->gpus, a->queued, "", 0};
    json j = s.client->post_json(kQuotas, q);
    if (ctx.global.output == "json") return print_json(ctx, j);
    *ctx.out << fmt::format("Quota of {} {}{}: {} GPUs at once, {} queued\n", a->kind, a->name,
                            a->pool == "*" ? "" : " in pool '" + a->pool + "'", limit(a->gpus), limit(a->queued));
  });
  auto* rm = cmd->add_subcommand("rm", "Remove a user's or group's quota");
  rm->add_option("KIND", a->kind, "user or group")->required();
  rm->add_option("NAME", a->name, "the user's or group's name")->required();
  rm->add_option("--pool", a->pool, "the quota of this pool (default: the one of every pool together)");
  rm->callback([&ctx, a] {
    check_kind(a->kind);
    Session s = connect(ctx);
    json j = s.client->post_json(kQuotas + "/delete", api::QuotaInfo{a->kind, a->name, a->pool, -1, -1, "", 0});
    if (ctx.global.output == "json") return print_json(ctx, j);
    *ctx.out << fmt::format("Removed the quota of {} {}{}\n", a->kind, a->name,
                            a->pool == "*" ? "" : " in pool '" + a->pool + "'");
  });
}

}  // namespace air::cli
