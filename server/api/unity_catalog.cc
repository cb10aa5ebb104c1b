// The Unity Catalog routes over VolumeAcl: thin handlers that authenticate, apply access.h and render
// Databricks' replies ({"privilege_assignments": [...]}, {"volumes": [...]}) and errors ({"error_code", "message"}).
#include "server/api/unity_catalog.h"

#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "server/http/server.h"
#include "server/workspace/workspace.h"

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
  UnityCatalogApi(http::Server& srv, Workspace& ws) : srv_(srv), ws_(ws) {}

  void install() {
    // Databricks asks for catalog_name and schema_name; here both are optional filters.
    on("GET", kUc + "/volumes", [this](const Req& req, Res& res, const Principal& who) {
      std::string catalog = lower(req.get_param_value("catalog_name")), schema = lower(req.get_param_value("schema_name"));
      json out = json::array();
      for (const auto& key : who.admin ? all_keys() : ws_.readable_volumes(who)) {
        std::string c = key.substr(0, key.find('/')), s = key.substr(c.size() + 1, key.rfind('/') - c.size() - 1);
        if ((catalog.empty() || c == catalog) && (schema.empty() || s == schema)) out.push_back(volume_json(key));
      }
      send(res, {{"volumes", out}});
    });
    on("GET", kUc + "/volumes/([^/]+)", [this](const Req& req, Res& res, const Principal& who) {
      std::string key = existing(req.matches[1]);
      ws_.require_volume(who, key, kReadVolume);
      send(res, volume_json(key));
    });
    on("GET", kUc + "/permissions/volume/([^/]+)", [this](const Req& req, Res& res, const Principal& who) {
      std::string key = existing(req.matches[1]);
      // The owner, admins and anyone holding a privilege on it may see who else does.
      if (ws_.volume_granted(who, key).empty()) ws_.require_volume(who, key, kReadVolume);
      send(res, assignments(key, req.get_param_value("principal")));
    });
    on("PATCH", kUc + "/permissions/volume/([^/]+)", [this](const Req& req, Res& res, const Principal& who) {
      std::string key = existing(req.matches[1]);
      auto rec = ws_.volume_record(key);
      if (!who.admin && who.user != rec->owner)
        throw FsError(403, "PERMISSION_DENIED",
                      fmt::format("user '{}' lacks ownership of volume {} (owner: {}); only its owner or a workspace "
                                  "admin may change its grants",
                                  who.user, volume_full_name(key), rec->owner));
      for (const auto& c : changes(req)) ws_.volume_acl().change(key, c.principal, c.add, c.remove);
      send(res, assignments(key, ""));
    });
  }

 private:
  using Fn = std::function<void(const Req&, Res&, const Principal&)>;

  void on(const std::string& method, const std::string& pattern, Fn f) {
    http::Handler h = [self = shared_from_this(), this, f](const Req& req, Res& res) {
      try {
        std::string why;
        auto who = ws_.authenticate(bearer(req), &why);
        if (!who) throw FsError(401, "UNAUTHENTICATED", why);
        if (who->is_node()) throw FsError(403, "PERMISSION_DENIED", "a node token may not use this API");
        f(req, res, *who);
      } catch (const FsError& e) {
        send(res, {{"error_code", e.code}, {"message", e.what()}}, e.status);
      }
    };
    if (method == "GET") srv_.Get(pattern, h);
    else srv_.Patch(pattern, h);
  }

  static std::string bearer(const Req& req) {
    auto h = req.get_header_value("Authorization");
    return h.rfind("Bearer ", 0) == 0 ? h.substr(7) : std::string();
  }

  static std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  std::vector<std::string> all_keys() const {
    std::vector<std::string> out;
    for (const auto& r : ws_.volume_acl().all()) out.push_back(r.key);
    return out;
  }

  // The key of catalog.schema.volume, which must exist.
  std::string existing(const std::string& full_name) const {
    auto key = volume_key_from_full_name(full_name);
    if (!key) throw bad(fmt::format("'{}' is not a volume's full name: use <catalog>.<schema>.<volume>", full_name));
    try {
      if (parse_volume_path("/Volumes/" + *key).volume_key() != *key) throw bad("");
    } catch (const FsError&) {
      throw bad(fmt::format("'{}' is not a valid volume name (Unity Catalog's rules: docs/volumes.md)", full_name));
    }
    if (!ws_.volume_record(*key))
      throw FsError(404, "RESOURCE_DOES_NOT_EXIST",
                    fmt::format("volume {} does not exist; create it: air fs mkdir dbfs:/Volumes/{}", full_name, *key));
    return *key;
  }

  json volume_json(const std::string& key) const {
    auto rec = ws_.volume_record(key);
    std::string c = key.substr(0, key.find('/')), v = key.substr(key.rfind('/') + 1);
    std::string s = key.substr(c.size() + 1, key.size() - c.size() - v.size() - 2);
    return {{"catalog_name", c}, {"schema_name", s}, {"name", v}, {"full_name", volume_full_name(key)},
            {"owner", rec ? rec->owner : ""}, {"created_by", rec ? rec->owner : ""},
            {"created_at", rec ? rec->created_ms : 0}, {"volume_type", "MANAGED"},
            {"storage_location", "/Volumes/" + key}};
  }

  json assignments(const std::string& key, const std::string& only) const {
    json out = json::array();
    for (const auto& g : ws_.volume_acl().grants(key))
      if (only.empty() || g.principal == only) out.push_back({{"principal", g.principal}, {"privileges", g.privileges}});
    return {{"privilege_assignments", out}};
  }

  struct Change {
    std::string principal;
    std::vector<std::string> add, remove;
  };

  // {"changes": [{"principal": "bob", "add": ["READ_VOLUME"], "remove": []}]}, every entry checked first.
  std::vector<Change> changes(const Req& req) const {
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
      if (ch.principal != kUsersGroup && !ws_.identity().user(ch.principal) && !ws_.identity().group(ch.principal))
        throw FsError(404, "RESOURCE_DOES_NOT_EXIST",
                      fmt::format("changes[{}]: no user or group named '{}' in this workspace (air users list, air "
                                  "groups list)", i, ch.principal));
      for (const char* k : {"add", "remove"}) {
        if (!c.contains(k)) continue;
        if (!c[k].is_array()) throw bad(fmt::format("changes[{}].{} must be a list of privileges", i, k));
        for (const auto& p : c[k]) {
          std::string v = p.is_string() ? p.get<std::string>() : p.dump();
          if (v != kReadVolume && v != kWriteVolume)
            throw bad(fmt::format("changes[{}].{}: '{}' is not a volume privilege; use READ_VOLUME or WRITE_VOLUME", i, k, v));
          (std::string(k) == "add" ? ch.add : ch.remove).push_back(v);
        }
      }
      out.push_back(std::move(ch));
    }
    return out;
  }

  http::Server& srv_;
  Workspace& ws_;
};

}  // namespace

void install_unity_catalog_routes(http::Server& srv, Workspace& ws) {
  std::make_shared<UnityCatalogApi>(srv, ws)->install();
}

}  // namespace air::server
