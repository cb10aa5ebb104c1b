// `air volumes list|grants|grant|revoke`: who may use which volume, over Unity Catalog's volume and
// permissions APIs (docs/volumes.md). A volume is named `catalog.schema.volume` or by its path.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <map>

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

// A securable of Unity Catalog: a catalog ("main"), a schema ("main.default") or a volume
// ("main.default.ckpt", "/Volumes/main/default/ckpt" or "dbfs:/Volumes/main/default/ckpt").
struct Securable {
  std::string type;       // catalog | schema | volume
  std::string full_name;  // dotted
};

Securable securable(const std::string& arg) {
  const char* hint = "name a catalog (main), a schema (main.default) or a volume (main.default.ckpt or "
                     "dbfs:/Volumes/main/default/ckpt)";
  if (arg.find('/') != std::string::npos) {
    VolumePath p;
    try {
      p = parse_volume_path(arg);
    } catch (const FsError& e) {
      throw usage_error(e.what(), hint);
    }
    if (p.parts.empty() || p.parts.size() > 3) throw usage_error(fmt::format("'{}' is not a catalog, schema or volume", arg), hint);
    std::string name;
    for (const auto& part : p.parts) name += (name.empty() ? "" : ".") + part;
    return {p.parts.size() == 1 ? "catalog" : p.parts.size() == 2 ? "schema" : "volume", name};
  }
  auto dots = std::count(arg.begin(), arg.end(), '.');
  if (arg.empty() || dots > 2 || arg.front() == '.' || arg.back() == '.' || arg.find("..") != std::string::npos)
    throw usage_error(fmt::format("'{}' is not a catalog, schema or volume", arg), hint);
  return {dots == 0 ? "catalog" : dots == 1 ? "schema" : "volume", arg};
}

// The privileges a securable of this type takes (the server checks them too; this says it before a request).
std::vector<std::string> privileges(const std::vector<std::string>& words, const std::string& type) {
  static const std::map<std::string, std::vector<std::string>> allowed = {
      {"catalog", {"USE_CATALOG", "CREATE_SCHEMA", "USE_SCHEMA", "CREATE_VOLUME"}},
      {"schema", {"USE_SCHEMA", "CREATE_VOLUME"}},
      {"volume", {"READ_VOLUME", "WRITE_VOLUME"}}};
  const auto& ok = allowed.at(type);
  std::vector<std::string> out;
  for (auto w : words) {
    for (auto& c : w) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (type == "volume" && w == "READ") w = "READ_VOLUME";
    if (type == "volume" && w == "WRITE") w = "WRITE_VOLUME";
    if (std::find(ok.begin(), ok.end(), w) == ok.end()) {
      std::string list;
      for (size_t i = 0; i < ok.size(); ++i) list += (i ? (i + 1 == ok.size() ? " or " : ", ") : "") + ok[i];
      throw usage_error(fmt::format("invalid privilege '{}'", w),
                        type == "volume" ? "use " + list : fmt::format("a {} takes {}", type, list));
    }
    out.push_back(w);
  }
  return out;
}

json patch(Client& c, const Securable& sec, const json& changes) {
  auto r = c.request("PATCH", kUc + "/permissions/" + sec.type + "/" + percent_encode(sec.full_name),
                     json{{"changes", changes}}.dump(), "application/json");
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
  auto* grants = cmd->add_subcommand("grants", "Show who holds which privilege on a volume, schema or catalog");
  grants->add_option("SECURABLE", a->volume, "catalog.schema.volume (or dbfs:/Volumes/c/s/v), catalog.schema or catalog")
      ->required();
  grants->callback([&ctx, a] {
    Session s = connect(ctx);
    Securable sec = securable(a->volume);
    print_grants(ctx, sec.full_name,
                 s.client->get_json(kUc + "/permissions/" + sec.type + "/" + percent_encode(sec.full_name)));
  });
  for (bool add : {true, false}) {
    auto* sub = cmd->add_subcommand(add ? "grant" : "revoke",
                                    add ? "Grant a user or group privileges on a volume (READ_VOLUME, WRITE_VOLUME), a "
                                          "schema (USE_SCHEMA, CREATE_VOLUME) or a catalog (USE_CATALOG, CREATE_SCHEMA, "
                                          "and the schema privileges for all its schemas); owner or admin"
                                        : "Take privileges back from a user or group (owner or admin)");
    sub->add_option("SECURABLE", a->volume, "catalog.schema.volume (or dbfs:/Volumes/c/s/v), catalog.schema or catalog")
        ->required();
    sub->add_option("PRINCIPAL", a->principal, "User or group name")->required();
    sub->add_option("PRIVILEGE", a->privileges, "e.g. READ_VOLUME, WRITE_VOLUME (READ, WRITE), CREATE_VOLUME, USE_SCHEMA")
        ->required();
    sub->callback([&ctx, a, add] {
      Securable sec = securable(a->volume);
      std::string name = sec.full_name;
      auto privs = privileges(a->privileges, sec.type);
      Session s = connect(ctx);
      json change{{"principal", a->principal}, {"add", add ? privs : std::vector<std::string>{}},
                  {"remove", add ? std::vector<std::string>{} : privs}};
      json j = patch(*s.client, sec, json::array({change}));
      if (ctx.global.output == "json") return print_json(ctx, j);
      std::string joined;
      for (const auto& p : privs) joined += (joined.empty() ? "" : ", ") + p;
      *ctx.out << fmt::format("{} {} on {} {} {}\n", add ? "Granted" : "Revoked", joined, name, add ? "to" : "from",
                              a->principal);
    });
  }
}

}  // namespace air::cli
