// The Unity Catalog routes over VolumeAcl: thin handlers that authenticate, apply access.h and render
// Databricks' replies ({"privilege_assignments": [...]}, {"volumes": [...]}) and errors ({"error_code", "message"}).
#include "server/api/unity_catalog.h"

#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "server/api/route.h"
#include "server/http/server.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"
#include "server/workspace/volume_access.h"

namespace air::server {

namespace {

using nlohmann::json;
using Req = http::Request;
using Res = http::Response;

const std::string kUc = "/api/2.1/unity-catalog";

void send(Res& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

FsError bad(const std::string& message) { return FsError(400, "INVALID_PARAMETER_VALUE", message); }

class UnityCatalogApi : public std::enable_shared_from_this<UnityCatalogApi> {
 public:
  UnityCatalogApi(http::Server& srv, Auth& auth, VolumeAccess& volumes) : srv_(srv), auth_(auth), va_(volumes) {}

  void install() {
    // Databricks asks for catalog_name and schema_name; here both are optional filters.
    on("GET", kUc + "/volumes", [this](const Req& req, Res& res, const Principal& who) {
      std::string catalog = lower(req.get_param_value("catalog_name")), schema = lower(req.get_param_value("schema_name"));
      json out = json::array();
      for (const auto& key : who.admin ? all_keys() : va_.readable_volumes(who)) {
        std::string c = key.substr(0, key.find('/')), s = key.substr(c.size() + 1, key.rfind('/') - c.size() - 1);
        if ((catalog.empty() || c == catalog) && (schema.empty() || s == schema)) out.push_back(volume_json(key));
      }
      send(res, {{"volumes", out}});
    });
    on("GET", kUc + "/volumes/([^/]+)", [this](const Req& req, Res& res, const Principal& who) {
      std::string key = existing(req.matches[1], who);
      va_.require_volume(who, key, kReadVolume);
      send(res, volume_json(key));
    });
    on("GET", kUc + "/catalogs", [this](const Req&, Res& res, const Principal& who) {
      json out = json::array();
      for (const auto& r : va_.acl().containers())
        if (r.key.find('/') == std::string::npos && container_visible(who, r.key)) out.push_back(container_json(r));
      send(res, {{"catalogs", out}});
    });
    on("GET", kUc + "/catalogs/([^/]+)", [this](const Req& req, Res& res, const Principal& who) {
      send(res, container_json(existing_container(req.matches[1], 1, who)));
    });
    on("GET", kUc + "/schemas", [this](const Req& req, Res& res, const Principal& who) {
      std::string catalog = lower(req.get_param_value("catalog_name"));
      json out = json::array();
      for (const auto& r : va_.acl().containers())
        if (auto slash = r.key.find('/'); slash != std::string::npos && (catalog.empty() || r.key.substr(0, slash) == catalog) &&
                                          container_visible(who, r.key))
          out.push_back(container_json(r));
      send(res, {{"schemas", out}});
    });
    on("GET", kUc + "/schemas/([^/]+)", [this](const Req& req, Res& res, const Principal& who) {
      send(res, container_json(existing_container(req.matches[1], 2, who)));
    });
    // Databricks' create calls: a catalog (admins), a schema (CREATE_SCHEMA on its catalog, USE_CATALOG).
    on("POST", kUc + "/catalogs", [this](const Req& req, Res& res, const Principal& who) {
      std::string name = lower(body_string(req, "name"));
      if (!securable_key_from_full_name(name, 1)) throw bad(fmt::format("'{}' is not a catalog name", name));
      if (!who.admin)
        throw FsError(403, "PERMISSION_DENIED",
                      fmt::format("user '{}' may not create catalogs: only workspace admins may", who.user));
      if (va_.acl().find_container(name))
        throw FsError(409, "CATALOG_ALREADY_EXISTS", fmt::format("catalog '{}' already exists", name));
      send(res, container_json(va_.acl().ensure_container(name, who.user, auth_.now_ms())));
    });
    on("POST", kUc + "/schemas", [this](const Req& req, Res& res, const Principal& who) {
      std::string c = lower(body_string(req, "catalog_name")), n = lower(body_string(req, "name"));
      auto key = securable_key_from_full_name(c + "." + n, 2);
      if (!key) throw bad(fmt::format("'{}.{}' is not a schema's full name", c, n));
      // Taken names read as taken (naming no owner); otherwise the volume rule's first steps decide
      // (USE_CATALOG, CREATE_SCHEMA on the catalog).
      if (va_.acl().find_container(*key))
        throw FsError(409, "SCHEMA_ALREADY_EXISTS", fmt::format("schema {}.{} already exists", c, n));
      if (auto why = va_.volume_create_refusal(who, *key)) throw FsError(403, "PERMISSION_DENIED", *why);
      send(res, container_json(va_.acl().ensure_container(*key, who.user, auth_.now_ms())));
    });
    const std::vector<std::pair<std::string, int>> securables = {{"catalog", 1}, {"schema", 2}, {"volume", 3}};
    for (const auto& [type, depth] : securables) {
      int d = depth;
      std::string t = type;
      on("GET", kUc + "/permissions/" + type + "/([^/]+)", [this, d](const Req& req, Res& res, const Principal& who) {
        std::string key = securable(req.matches[1], d, who);
        send(res, assignments(key, req.get_param_value("principal")));
      });
      on("PATCH", kUc + "/permissions/" + type + "/([^/]+)", [this, d, t](const Req& req, Res& res, const Principal& who) {
        std::string key = securable(req.matches[1], d, who);
        std::string owner = d == 3 ? va_.volume_record(key)->owner : va_.acl().find_container(key)->owner;
        if (!who.admin && who.user != owner)
          throw FsError(403, "PERMISSION_DENIED",
                        fmt::format("user '{}' lacks ownership of {} {} (owner: {}); only its owner or a workspace "
                                    "admin may change its grants",
                                    who.user, t, volume_full_name(key), owner));
        for (const auto& c : changes(req, d)) va_.acl().change(key, c.principal, c.add, c.remove);
        send(res, assignments(key, ""));
      });
    }
  }

 private:
  using Fn = std::function<void(const Req&, Res&, const Principal&)>;

  void on(const std::string& method, const std::string& pattern, Fn f) {
    http::Handler h = [self = shared_from_this(), this, f](const Req& req, Res& res) {
      try {
        std::string why;
        auto who = auth_.authenticate(route::bearer(req), &why);
        if (!who) throw FsError(401, "UNAUTHENTICATED", why);
        if (who->is_node()) throw FsError(403, "PERMISSION_DENIED", "a node token may not use this API");
        f(req, res, *who);
      } catch (const FsError& e) {
        send(res, {{"error_code", e.code}, {"message", e.what()}}, e.status);
      }
    };
    if (method == "GET") srv_.Get(pattern, h);
    else if (method == "POST") srv_.Post(pattern, h);
    else srv_.Patch(pattern, h);
  }

  static std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  std::vector<std::string> all_keys() const {
    std::vector<std::string> out;
    for (const auto& r : va_.acl().all()) out.push_back(r.key);
    return out;
  }

  // The key of catalog.schema.volume, which must exist and be visible to `who` (else the same 404).
  std::string existing(const std::string& full_name, const Principal& who) const {
    auto key = volume_key_from_full_name(full_name);
    if (!key) throw bad(fmt::format("'{}' is not a volume's full name: use <catalog>.<schema>.<volume>", full_name));
    try {
      if (parse_volume_path("/Volumes/" + *key).volume_key() != *key) throw bad("");
    } catch (const FsError&) {
      throw bad(fmt::format("'{}' is not a valid volume name (Unity Catalog's rules: docs/volumes.md)", full_name));
    }
    if (!va_.volume_record(*key) || va_.volume_hidden(who, *key))
      throw FsError(404, "RESOURCE_DOES_NOT_EXIST",
                    fmt::format("volume {} does not exist; create it: air fs mkdir dbfs:/Volumes/{}", full_name, *key));
    return *key;
  }

  // A catalog or schema is visible to admins, its owner (or its catalog's) and anyone holding a privilege on
  // it (for a schema: on it or on its catalog); to others it does not exist.
  bool container_visible(const Principal& who, const std::string& key) const {
    if (who.admin) return true;
    auto principals = acl_principals(who);
    std::vector<std::string> owners;
    for (const auto& k : {key.substr(0, key.find('/')), key}) {
      if (auto r = va_.acl().find_container(k)) owners.push_back(r->owner);
      if (!va_.acl().granted(k, principals).empty()) return true;
    }
    return std::find(owners.begin(), owners.end(), who.user) != owners.end();
  }

  VolumeRecord existing_container(const std::string& full_name, int depth, const Principal& who) const {
    const char* kind = depth == 1 ? "catalog" : "schema";
    auto key = securable_key_from_full_name(full_name, depth);
    if (!key) throw bad(fmt::format("'{}' is not a {} name", full_name, kind));
    auto r = va_.acl().find_container(*key);
    if (!r || !container_visible(who, *key))
      throw FsError(404, depth == 1 ? "CATALOG_DOES_NOT_EXIST" : "SCHEMA_DOES_NOT_EXIST",
                    fmt::format("{} {} does not exist", kind, lower(full_name)));
    return *r;
  }

  // The key of a securable whose grants are read or changed: a volume (the volume routes' rule: the owner,
  // admins and grantees see its grants), a schema or a catalog (those who see it).
  std::string securable(const std::string& full_name, int depth, const Principal& who) const {
    if (depth == 3) {
      std::string key = existing(full_name, who);
      if (va_.volume_granted(who, key).empty()) va_.require_volume(who, key, kReadVolume);
      return key;
    }
    return existing_container(full_name, depth, who).key;
  }

  json container_json(const VolumeRecord& r) const {
    auto slash = r.key.find('/');
    json j{{"name", slash == std::string::npos ? r.key : r.key.substr(slash + 1)}, {"full_name", volume_full_name(r.key)},
           {"owner", r.owner}, {"created_by", r.owner}, {"created_at", r.created_ms}};
    if (slash != std::string::npos) j["catalog_name"] = r.key.substr(0, slash);
    return j;
  }

  static std::string body_string(const Req& req, const char* name) {
    json b = json::parse(req.body, nullptr, false);
    if (!b.is_object() || !b.contains(name) || !b[name].is_string())
      throw bad(fmt::format("the body must be a JSON object with a string '{}'", name));
    return b[name].get<std::string>();
  }

  json volume_json(const std::string& key) const {
    auto rec = va_.volume_record(key);
    std::string c = key.substr(0, key.find('/')), v = key.substr(key.rfind('/') + 1);
    std::string s = key.substr(c.size() + 1, key.size() - c.size() - v.size() - 2);
    return {{"catalog_name", c}, {"schema_name", s}, {"name", v}, {"full_name", volume_full_name(key)},
            {"owner", rec ? rec->owner : ""}, {"created_by", rec ? rec->owner : ""},
            {"created_at", rec ? rec->created_ms : 0}, {"volume_type", "MANAGED"},
            {"storage_location", "/Volumes/" + key}};
  }

  json assignments(const std::string& key, const std::string& only) const {
    json out = json::array();
    for (const auto& g : va_.acl().grants(key))
      if (only.empty() || g.principal == only) out.push_back({{"principal", g.principal}, {"privileges", g.privileges}});
    return {{"privilege_assignments", out}};
  }

  struct Change {
    std::string principal;
    std::vector<std::string> add, remove;
  };

  // {"changes": [{"principal": "bob", "add": ["READ_VOLUME"], "remove": []}]}, every entry checked first.
  std::vector<Change> changes(const Req& req, int depth) const {
    const auto& allowed = privileges_for_depth(depth);
    json b = json::parse(req.body, nullptr, false);
    if (b.is_discarded() || !b.is_object() || !b.contains("changes") || !b["changes"].is_array())
      throw bad("the body must be {\"changes\": [{\"principal\": NAME, \"add\": [PRIVILEGE], \"remove\": [PRIVILEGE]}]}");
    std::vector<Change> out;
    for (size_t i = 0; i < b["changes"].size(); ++i) {
      const json& c = b["changes"][i];
      Change ch;
      if (!c.is_object() || !c.contains("principal") || !c["principal"].is_string())
        throw bad(fmt::format("changes[{}]: missing required field: principal", i));
      ch.principal = c["principal"].get<std::string>();
      if (ch.principal != kUsersGroup && !auth_.identity().user(ch.principal) && !auth_.identity().group(ch.principal))
        throw FsError(404, "RESOURCE_DOES_NOT_EXIST",
                      fmt::format("changes[{}]: no user or group named '{}' in this workspace (air users list, air "
                                  "groups list)", i, ch.principal));
      for (const char* k : {"add", "remove"}) {
        if (!c.contains(k)) continue;
        if (!c[k].is_array()) throw bad(fmt::format("changes[{}].{} must be a list of privileges", i, k));
        for (const auto& p : c[k]) {
          std::string v = p.is_string() ? p.get<std::string>() : p.dump();
          if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
            std::string list;
            for (size_t j = 0; j < allowed.size(); ++j)
              list += (j ? (j + 1 == allowed.size() ? " or " : ", ") : "") + allowed[j];
            throw bad(fmt::format("changes[{}].{}: '{}' is not a {} privilege; use {}", i, k, v,
                                  depth == 1 ? "catalog" : depth == 2 ? "schema" : "volume", list));
          }
          (std::string(k) == "add" ? ch.add : ch.remove).push_back(v);
        }
      }
      out.push_back(std::move(ch));
    }
    return out;
  }

  http::Server& srv_;
  Auth& auth_;
  VolumeAccess& va_;
};

}  // namespace

void install_unity_catalog_routes(http::Server& srv, Auth& auth, VolumeAccess& volumes) {
  std::make_shared<UnityCatalogApi>(srv, auth, volumes)->install();
}

}  // namespace air::server
