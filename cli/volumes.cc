// `air volumes list|grants|grant|revoke`: who may use which volume, over Unity Catalog's volume and
// permissions APIs (docs/volumes.md). A volume is named `catalog.schema.volume` or by its path.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "cli/output.h"
#include "cli/remote.h"
#include "cli/verbs.h"
#include "core/base/codec.h"
#include "core/base/error.h"
#include "core/volumes/path.h"

namespace air::cli {

namespace {

using nlohmann::json;

const std::string kUc = "/api/2.1/unity-catalog";

// "main.default.ckpt", "/Volumes/main/default/ckpt" or "dbfs:/Volumes/main/default/ckpt" -> main.default.ckpt
std::string full_name(const std::string& arg) {
  const char* hint = "name a volume as <catalog>.<schema>.<volume> or dbfs:/Volumes/<catalog>/<schema>/<volume>";
  if (arg.find('/') != std::string::npos) {
    VolumePath p;
    try {
      p = parse_volume_path(arg);
    } catch (const FsError& e) {
      throw usage_error(e.what(), hint);
    }
    if (!p.is_volume_root()) throw usage_error(fmt::format("'{}' is not a volume", arg), hint);
    return p.parts[0] + "." + p.parts[1] + "." + p.parts[2];
  }
  if (std::count(arg.begin(), arg.end(), '.') != 2) throw usage_error(fmt::format("'{}' is not a volume", arg), hint);
  return arg;
}

std::vector<std::string> privileges(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  for (auto w : words) {
    for (auto& c : w) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (w == "READ") w = "READ_VOLUME";
    if (w == "WRITE") w = "WRITE_VOLUME";
    if (w != "READ_VOLUME" && w != "WRITE_VOLUME")
      throw usage_error(fmt::format("invalid privilege '{}'", w), "use READ_VOLUME or WRITE_VOLUME");
    out.push_back(w);
  }
  return out;
}

json patch(Client& c, const std::string& name, const json& changes) {
  auto r = c.request("PATCH", kUc + "/permissions/volume/" + percent_encode(name), json{{"changes", changes}}.dump(),
                     "application/json");
  if (r.status / 100 != 2) c.throw_api_error(r);
  return json::parse(r.body);
}

void print_grants(const Context& ctx, const std::string& name, const json& j) {
  if (ctx.global.output == "json") return print_json(ctx, j);
  const json& a = j.value("privilege_assignments", json::array());
  if (a.empty()) *ctx.out << fmt::format("No grants on {} (only its owner and admins may use it)\n", name);
  for (const auto& g : a) {
    std::string privs;
    for (const auto& p : g.value("privileges", json::array())) privs += (privs.empty() ? "" : ", ") + p.get<std::string>();
    *ctx.out << fmt::format("{:<24} {}\n", g.value("principal", ""), privs);
  }
}

}  // namespace

void setup_volumes(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("volumes", "Volumes you may read, their owners, and who may read or write them");
  cmd->require_subcommand(1);
  struct Args {
    std::string volume, principal, catalog, schema;
    std::vector<std::string> privileges;
  };
  auto a = std::make_shared<Args>();
  auto* list = cmd->add_subcommand("list", "List the volumes you may read (admins: every volume)");
  list->add_option("--catalog", a->catalog, "Only this catalog");
  list->add_option("--schema", a->schema, "Only this schema");
  list->callback([&ctx, a] {
    Session s = connect(ctx);
    std::string q;
    if (!a->catalog.empty()) q += "&catalog_name=" + percent_encode(a->catalog);
    if (!a->schema.empty()) q += "&schema_name=" + percent_encode(a->schema);
    json j = s.client->get_json(kUc + "/volumes" + (q.empty() ? "" : "?" + q.substr(1)));
    if (ctx.global.output == "json") return print_json(ctx, j);
    for (const auto& v : j.value("volumes", json::array()))
      *ctx.out << fmt::format("{:<40} owner {}\n", v.value("full_name", ""), v.value("owner", ""));
  });
  auto* grants = cmd->add_subcommand("grants", "Show who holds which privilege on a volume");
  grants->add_option("VOLUME", a->volume, "catalog.schema.volume or dbfs:/Volumes/c/s/v")->required();
  grants->callback([&ctx, a] {
    Session s = connect(ctx);
    std::string name = full_name(a->volume);
    print_grants(ctx, name, s.client->get_json(kUc + "/permissions/volume/" + percent_encode(name)));
  });
  for (bool add : {true, false}) {
    auto* sub = cmd->add_subcommand(add ? "grant" : "revoke",
                                    add ? "Grant a user or group READ_VOLUME and/or WRITE_VOLUME (owner or admin)"
                                        : "Take privileges back from a user or group (owner or admin)");
    sub->add_option("VOLUME", a->volume, "catalog.schema.volume or dbfs:/Volumes/c/s/v")->required();
    sub->add_option("PRINCIPAL", a->principal, "User or group name")->required();
    sub->add_option("PRIVILEGE", a->privileges, "READ_VOLUME, WRITE_VOLUME (or READ, WRITE)")->required();
    sub->callback([&ctx, a, add] {
      std::string name = full_name(a->volume);
      auto privs = privileges(a->privileges);
      Session s = connect(ctx);
      json change{{"principal", a->principal}, {"add", add ? privs : std::vector<std::string>{}},
                  {"remove", add ? std::vector<std::string>{} : privs}};
      json j = patch(*s.client, name, json::array({change}));
      if (ctx.global.output == "json") return print_json(ctx, j);
      std::string joined;
      for (const auto& p : privs) joined += (joined.empty() ? "" : ", ") + p;
      *ctx.out << fmt::format("{} {} on {} {} {}\n", add ? "Granted" : "Revoked", joined, name, add ? "to" : "from",
                              a->principal);
    });
  }
}

}  // namespace air::cli
