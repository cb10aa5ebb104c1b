// `air auth profiles` and `air auth login --host URL`: the profiles of ~/.databrickscfg (shared with the
// Databricks CLI, which reads what login writes) and of $AIR_HOME/config. No output ever shows a token.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "cli/output.h"
#include "cli/secrets/secrets.h"
#include "cli/verbs.h"
#include "core/base/error.h"
#include "core/client/config.h"

namespace air::cli {

namespace {

// "dbc-1234.cloud.databricks.com" -> "dbc-1234", as `databricks auth login` names a new profile.
std::string profile_name_for(const std::string& url) {
  std::string h = url.substr(url.find("://") == std::string::npos ? 0 : url.find("://") + 3);
  h = h.substr(0, h.find_first_of(".:/"));
  for (auto& c : h)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '-';
  return h.empty() ? "DEFAULT" : h;
}

void run_profiles(Context& ctx) {
  auto ps = list_profiles();
  if (ctx.global.output == "json") {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : ps)
      list.push_back({{"name", p.name}, {"host", p.host}, {"file", p.file}, {"has_token", p.has_token},
                      {"default", p.is_default}});
    print_json(ctx, {{"profiles", list}});
    return;
  }
  if (ps.empty()) {
    *ctx.out << "No profiles in " << databricks_config_path() << " or " << config_file_path() << ".\n";
    *ctx.err << "  hint: air auth login --host URL -p NAME\n";
    return;
  }
  size_t wn = 4, wh = 4;
  for (const auto& p : ps) wn = std::max(wn, p.name.size() + 2), wh = std::max(wh, p.host.size());
  *ctx.out << fmt::format("{:<{}}  {:<{}}  {:<5}  {}\n", "Name", wn, "Host", wh, "Token", "File");
  for (const auto& p : ps)
    *ctx.out << fmt::format("{:<{}}  {:<{}}  {:<5}  {}\n", p.name + (p.is_default ? " *" : ""), wn, p.host, wh,
                            p.has_token ? "yes" : "no", p.file);
}

struct LoginFlags {
  std::string host;
  bool token_stdin = false, make_default = false;
};

void run_login(const LoginFlags& f, Context& ctx) {
  std::string url = normalize_host(f.host);
  if (url.empty()) throw usage_error("--host is empty", "air auth login --host https://ws.example.com");
  std::string name = ctx.global.profile.empty() ? profile_name_for(url) : ctx.global.profile;
  if (!f.token_stdin && !::isatty(0))
    throw usage_error("no terminal to ask for the token on", "pipe it in: printf %s \"$TOKEN\" | air auth login "
                                                              "--host " + f.host + " --token-stdin");
  std::string token = read_secret_value(f.token_stdin ? -1 : 0, std::cin, *ctx.err, "the token of " + url);
  if (token.empty()) throw usage_error("the token is empty", "pass the workspace's token on stdin");
  std::string file = databricks_config_path();
  bool had_default = false;
  for (const auto& p : list_profiles()) had_default = had_default || p.is_default;
  bool make_default = f.make_default || !had_default;
  write_profile(file, name, url, token, make_default);
  if (ctx.global.output == "json") {
    print_json(ctx, {{"profile", name}, {"host", url}, {"file", file}, {"default", make_default}});
    return;
  }
  *ctx.out << fmt::format("Profile {} saved to {}{}\n", name, file, make_default ? " (the default profile)" : "");
  if (!make_default) *ctx.err << "  use it: air -p " << name << " list (or export DATABRICKS_CONFIG_PROFILE=" << name << ")\n";
}

}  // namespace

void setup_auth(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("auth", "Workspace profiles, shared with the Databricks CLI (~/.databrickscfg)");
  cmd->require_subcommand(1);
  auto* profiles = cmd->add_subcommand("profiles", "List the profiles of ~/.databrickscfg and ~/.air/config (* = default)");
  profiles->callback([&ctx] { run_profiles(ctx); });
  auto* login = cmd->add_subcommand("login", "Save a workspace's host and token as a profile (-p NAME; default: the host's first label)");
  auto f = std::make_shared<LoginFlags>();
  login->add_option("--host", f->host, "Workspace URL (a bare host means https://)")->required()->type_name("URL");
  login->add_flag("--token-stdin", f->token_stdin, "Read the token from stdin instead of a hidden prompt");
  login->add_flag("--default", f->make_default,
                  "Make it [__settings__] default_profile (the first profile saved becomes the default anyway)");
  login->callback([&ctx, f] { run_login(*f, ctx); });
  for (auto* sub : cmd->get_subcommands({})) sub->fallthrough();
}

}  // namespace air::cli
