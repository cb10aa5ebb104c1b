// The verbs of a shared workspace: `air users`, `air groups`, `air tokens` and `air audit`, over the
// workspace's SCIM, Token and audit APIs (docs/security.md). A token is printed once, when created.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/output.h"
#include "cli/format.h"
#include "cli/remote.h"
#include "cli/verbs.h"
#include "core/base/codec.h"
#include "core/base/error.h"
#include "core/base/time.h"

namespace air::cli {

namespace {

using nlohmann::json;

const std::string kScim = "/api/2.0/preview/scim/v2";

// "90s", "10m", "1h", "30d" -> seconds; `flag` names the option in the error.
int64_t parse_seconds(const std::string& s, const std::string& flag) {
  std::optional<int64_t> ms = parse_duration_ms(s, 's');  // core/base/time.h
  if (!ms || *ms <= 0)
    throw usage_error(fmt::format("invalid {} '{}'", flag, s), "use a positive number with s, m, h or d: " + flag + " 1h");
  return *ms / 1000;
}

// The SCIM user with this name (its id), or a NOT_FOUND error.
json find_user(Client& c, const std::string& name) {
  json r = c.get_json(kScim + "/Users?filter=" + percent_encode("userName eq \"" + name + "\""));
  if (!r.contains("Resources") || r["Resources"].empty()) throw Error(fmt::format("user '{}' does not exist", name), "air users list");
  return r["Resources"][0];
}

json find_group(Client& c, const std::string& name) {
  json r = c.get_json(kScim + "/Groups");
  for (const auto& g : r.value("Resources", json::array()))
    if (g.value("displayName", "") == name) return g;
  throw Error(fmt::format("group '{}' does not exist", name), "air groups list");
}

std::string when(int64_t ms) { return ms < 0 ? "never" : format_time(ms); }

void print_token(const Context& ctx, const json& created, const std::string& user) {
  const json& info = created["token_info"];
  if (ctx.global.output == "json") {
    print_json(ctx, {{"token_value", created["token_value"]}, {"token_id", info["token_id"]}, {"user", user},
                     {"expiry_time", info["expiry_time"]}, {"comment", info["comment"]}});
    return;
  }
  *ctx.out << fmt::format("Token {} for {} (expires {}). It is shown only now:\n{}\n", info.value("token_id", ""), user,
                          when(info.value("expiry_time", int64_t{-1})), created.value("token_value", ""));
}

void setup_users(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("users", "Manage the workspace's users (admins): add, list, remove");
  cmd->require_subcommand(1);
  auto name = std::make_shared<std::string>(), display = std::make_shared<std::string>();
  auto admin = std::make_shared<bool>(false);
  auto token = std::make_shared<bool>(false);
  auto lifetime = std::make_shared<std::string>();
  auto* add = cmd->add_subcommand("add", "Add a user; --token also creates its first personal access token");
  add->add_option("NAME", *name, "User name (e.g. alice or alice@example.com)")->required();
  add->add_option("--display-name", *display, "Display name");
  add->add_flag("--admin", *admin, "Make the user a workspace admin (group admins)");
  add->add_flag("--token", *token, "Create a token for the user and print it (once)");
  add->add_option("--lifetime", *lifetime, "The token's lifetime (e.g. 30d); default: no expiry");
  add->callback([&ctx, name, display, admin, token, lifetime] {
    Session s = connect(ctx);
    json body{{"userName", *name}};
    if (!display->empty()) body["displayName"] = *display;
    if (*admin) body["groups"] = json::array({{{"value", find_group(*s.client, "admins")["id"]}}});
    json u = s.client->post_json(kScim + "/Users", body);
    json t;
    if (*token) {
      json req{{"application_id", *name}, {"comment", "created by air users add"}};
      if (!lifetime->empty()) req["lifetime_seconds"] = parse_seconds(*lifetime, "--lifetime");
      t = s.client->post_json("/api/2.0/token-management/on-behalf-of/tokens", req);
    }
    if (ctx.global.output == "json") {
      json out{{"user", {{"id", u["id"]}, {"user_name", u["userName"]}, {"admin", *admin}}}};
      if (*token) out["token_value"] = t["token_value"], out["token_id"] = t["token_info"]["token_id"];
      print_json(ctx, out);
      return;
    }
    *ctx.out << fmt::format("Added user {} (id {}){}\n", u.value("userName", ""), u.value("id", ""), *admin ? ", admin" : "");
    if (*token) print_token(ctx, t, *name);
  });
  auto* list = cmd->add_subcommand("list", "List users");
  list->callback([&ctx] {
    Session s = connect(ctx);
    json r = s.client->get_json(kScim + "/Users");
    json rows = json::array();
    for (const auto& u : r.value("Resources", json::array())) {
      json groups = json::array();
      for (const auto& g : u.value("groups", json::array())) groups.push_back(g.value("display", ""));
      rows.push_back({{"id", u["id"]}, {"user_name", u["userName"]}, {"display_name", u["displayName"]},
                      {"active", u["active"]}, {"groups", groups}});
    }
    if (ctx.global.output == "json") return print_json(ctx, {{"users", rows}});
    *ctx.out << fmt::format("{:<6}{:<28}{:<10}{}\n", "ID", "USER", "ACTIVE", "GROUPS");
    for (const auto& u : rows) {
      std::string groups;
      for (const auto& g : u["groups"]) groups += (groups.empty() ? "" : ",") + g.get<std::string>();
      *ctx.out << fmt::format("{:<6}{:<28}{:<10}{}\n", u["id"].get<std::string>(), u["user_name"].get<std::string>(),
                              u["active"].get<bool>() ? "yes" : "no", groups);
    }
  });
  auto* remove = cmd->add_subcommand("remove", "Deactivate a user: its tokens stop working at once (its runs stay)");
  remove->add_option("NAME", *name, "User name")->required();
  remove->callback([&ctx, name] {
    Session s = connect(ctx);
    json u = find_user(*s.client, *name);
    json patch{{"schemas", {"urn:ietf:params:scim:api:messages:2.0:PatchOp"}},
               {"Operations", {{{"op", "replace"}, {"path", "active"}, {"value", false}}}}};
    auto r = s.client->request("PATCH", kScim + "/Users/" + u["id"].get<std::string>(), patch.dump(), "application/json");
    if (!r.ok()) s.client->throw_api_error(r);
    if (ctx.global.output == "json") return print_json(ctx, {{"user", *name}, {"active", false}});
    *ctx.out << fmt::format("Deactivated user {}; its tokens no longer work\n", *name);
  });
}

void setup_groups(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("groups", "Manage groups (admins): create, list, delete, add-member, remove-member");
  cmd->require_subcommand(1);
  auto group = std::make_shared<std::string>(), user = std::make_shared<std::string>();
  auto* create = cmd->add_subcommand("create", "Create a group");
  create->add_option("GROUP", *group, "Group name")->required();
  create->callback([&ctx, group] {
    Session s = connect(ctx);
    json g = s.client->post_json(kScim + "/Groups", {{"displayName", *group}});
    if (ctx.global.output == "json") return print_json(ctx, {{"group", *group}, {"id", g["id"]}});
    *ctx.out << fmt::format("Created group {} (id {})\n", *group, g.value("id", ""));
  });
  auto* list = cmd->add_subcommand("list", "List groups and their members");
  list->callback([&ctx] {
    Session s = connect(ctx);
    json rows = json::array();
    for (const auto& g : s.client->get_json(kScim + "/Groups").value("Resources", json::array())) {
      json members = json::array();
      for (const auto& m : g.value("members", json::array())) members.push_back(m.value("display", ""));
      rows.push_back({{"id", g["id"]}, {"group", g["displayName"]}, {"members", members}});
    }
    if (ctx.global.output == "json") return print_json(ctx, {{"groups", rows}});
    *ctx.out << fmt::format("{:<6}{:<24}{}\n", "ID", "GROUP", "MEMBERS");
    for (const auto& g : rows) {
      std::string members;
      for (const auto& m : g["members"]) members += (members.empty() ? "" : ",") + m.get<std::string>();
      *ctx.out << fmt::format("{:<6}{:<24}{}\n", g["id"].get<std::string>(), g["group"].get<std::string>(), members);
    }
  });
  auto* del = cmd->add_subcommand("delete", "Delete a group");
  del->add_option("GROUP", *group, "Group name")->required();
  del->callback([&ctx, group] {
    Session s = connect(ctx);
    auto r = s.client->request("DELETE", kScim + "/Groups/" + find_group(*s.client, *group)["id"].get<std::string>());
    if (!r.ok()) s.client->throw_api_error(r);
    if (ctx.global.output == "json") return print_json(ctx, {{"group", *group}});
    *ctx.out << fmt::format("Deleted group {}\n", *group);
  });
  for (bool add : {true, false}) {
    auto* m = cmd->add_subcommand(add ? "add-member" : "remove-member", add ? "Add a user to a group" : "Remove a user from a group");
    m->add_option("GROUP", *group, "Group name")->required();
    m->add_option("USER", *user, "User name")->required();
    m->callback([&ctx, group, user, add] {
      Session s = connect(ctx);
      std::string gid = find_group(*s.client, *group)["id"], uid = find_user(*s.client, *user)["id"];
      json op = add ? json{{"op", "add"}, {"path", "members"}, {"value", {{{"value", uid}}}}}
                    : json{{"op", "remove"}, {"path", "members[value eq \"" + uid + "\"]"}};
      json patch{{"schemas", {"urn:ietf:params:scim:api:messages:2.0:PatchOp"}}, {"Operations", {op}}};
      auto r = s.client->request("PATCH", kScim + "/Groups/" + gid, patch.dump(), "application/json");
      if (!r.ok()) s.client->throw_api_error(r);
      if (ctx.global.output == "json") return print_json(ctx, {{"group", *group}, {"user", *user}, {"member", add}});
      *ctx.out << (add ? fmt::format("Added {} to group {}\n", *user, *group) : fmt::format("Removed {} from group {}\n", *user, *group));
    });
  }
}

void setup_tokens(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("tokens", "Personal access tokens: create, list, revoke");
  cmd->require_subcommand(1);
  auto lifetime = std::make_shared<std::string>(), comment = std::make_shared<std::string>();
  auto user = std::make_shared<std::string>(), id = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  auto* create = cmd->add_subcommand("create", "Create a token (printed once); --user U: for another user (admins)");
  create->add_option("--lifetime", *lifetime, "How long it lives (e.g. 90m, 30d); default: no expiry");
  create->add_option("--comment", *comment, "What it is for");
  create->add_option("--user", *user, "Create it for this user (admins)");
  create->callback([&ctx, lifetime, comment, user] {
    Session s = connect(ctx);
    json req{{"comment", *comment}};
    if (!lifetime->empty()) req["lifetime_seconds"] = parse_seconds(*lifetime, "--lifetime");
    json t;
    std::string who = *user;
    if (user->empty()) {
      t = s.client->post_json("/api/2.0/token/create", req);
      who = s.client->get_json(kScim + "/Me").value("userName", "");
    } else {
      req["application_id"] = *user;
      t = s.client->post_json("/api/2.0/token-management/on-behalf-of/tokens", req);
    }
    print_token(ctx, t, who);
  });
  auto* list = cmd->add_subcommand("list", "List your tokens (--all: every user's, admins)");
  list->add_flag("--all", *all, "Every user's tokens (admins)");
  list->callback([&ctx, all] {
    Session s = connect(ctx);
    json r = s.client->get_json(*all ? "/api/2.0/token-management/tokens" : "/api/2.0/token/list");
    json rows = r.value("token_infos", json::array());
    if (ctx.global.output == "json") return print_json(ctx, {{"tokens", rows}});
    *ctx.out << fmt::format("{:<34}{:<16}{:<25}{:<25}{}\n", "TOKEN ID", "USER", "CREATED", "EXPIRES", "COMMENT");
    for (const auto& t : rows)
      *ctx.out << fmt::format("{:<34}{:<16}{:<25}{:<25}{}\n", t.value("token_id", ""), t.value("created_by_username", "(you)"),
                              format_time(t.value("creation_time", int64_t{0})), when(t.value("expiry_time", int64_t{-1})),
                              t.value("comment", ""));
  });
  auto* revoke = cmd->add_subcommand("revoke", "Revoke a token by id: refused from its next request on");
  revoke->add_option("TOKEN_ID", *id, "The token's id (air tokens list)")->required();
  revoke->add_flag("--any-user", *all, "Revoke another user's token (admins)");
  revoke->callback([&ctx, id, all] {
    Session s = connect(ctx);
    if (*all) {
      auto r = s.client->request("DELETE", "/api/2.0/token-management/tokens/" + *id);
      if (!r.ok()) s.client->throw_api_error(r);
    } else {
      s.client->post_json("/api/2.0/token/delete", {{"token_id", *id}});
    }
    if (ctx.global.output == "json") return print_json(ctx, {{"token_id", *id}, {"revoked", true}});
    *ctx.out << fmt::format("Revoked token {}\n", *id);
  });
}

void setup_audit(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("audit", "Who did what: the workspace's audit log (admins: everyone's; users: their own)");
  auto user = std::make_shared<std::string>(), since = std::make_shared<std::string>();
  auto limit = std::make_shared<int>(1000);
  cmd->add_option("--user", *user, "Only this user's requests");
  cmd->add_option("--since", *since, "Only the last ... (e.g. 1h, 30m, 7d)");
  cmd->add_option("--limit", *limit, "At most this many entries, the newest (default 1000)");
  cmd->callback([&ctx, user, since, limit] {
    if (*limit <= 0) throw usage_error(fmt::format("invalid --limit {}: must be > 0", *limit));
    int64_t since_ms = since->empty() ? 0 : now_ms() - parse_seconds(*since, "--since") * 1000;
    Session s = connect(ctx);
    std::string path = fmt::format("{}/audit?limit={}&since_ms={}", api::kPrefix, *limit, since_ms);
    if (!user->empty()) path += "&user=" + percent_encode(*user);
    json r = s.client->get_json(path);
    json rows = r.value("entries", json::array());
    if (ctx.global.output == "json") return print_json(ctx, {{"entries", rows}});
    if (rows.empty()) {
      *ctx.out << "No audit entries.\n";
      return;
    }
    *ctx.out << fmt::format("{:<21}{:<16}{:<7}{:<7}{:<46}{}\n", "TIME", "USER", "STATUS", "METHOD", "ROUTE", "OBJECT");
    for (const auto& e : rows)
      *ctx.out << fmt::format("{:<21}{:<16}{:<7}{:<7}{:<46}{}\n", format_time(e.value("time_ms", int64_t{0})).substr(0, 19),
                              e.value("user", "").empty() ? "-" : e.value("user", ""), e.value("status", 0),
                              e.value("method", ""), e.value("route", ""), e.value("object", ""));
  });
}

}  // namespace

void setup_team(CLI::App& app, Context& ctx) {
  setup_users(app, ctx);
  setup_groups(app, ctx);
  setup_tokens(app, ctx);
  setup_audit(app, ctx);
}

}  // namespace air::cli
