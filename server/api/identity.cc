// SCIM, tokens and audit routes (server/api/identity.h): thin handlers over Auth (tokens) and its IdentityStore.
#include "server/api/identity.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <regex>

#include "core/wire/api.h"
#include "server/api/route.h"
#include "server/api/secrets.h"
#include "server/http/server.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"

namespace air::server {

namespace {

using nlohmann::json;
using Req = http::Request;
using Res = http::Response;

const std::string kScim = "/api/2.0/preview/scim/v2";
const char* kUserSchema = "urn:ietf:params:scim:schemas:core:2.0:User";
const char* kGroupSchema = "urn:ietf:params:scim:schemas:core:2.0:Group";
const char* kListSchema = "urn:ietf:params:scim:api:messages:2.0:ListResponse";

struct Refusal {
  int status;
  std::string code, message;
};

int status_for(const std::string& code) {
  if (code == "RESOURCE_DOES_NOT_EXIST") return 404;
  if (code == "RESOURCE_ALREADY_EXISTS") return 409;
  return 400;
}

void send(Res& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

json body_of(const Req& req) {
  if (req.body.empty()) return json::object();
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Refusal{400, "MALFORMED_REQUEST", "the request body is not a JSON object"};
  return j;
}

std::string string_field(const json& j, const char* name, bool required) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (required) throw Refusal{400, "INVALID_PARAMETER_VALUE", fmt::format("missing required field: {}", name)};
    return {};
  }
  if (!it->is_string()) throw Refusal{400, "INVALID_PARAMETER_VALUE", fmt::format("field '{}' must be a string", name)};
  return it->get<std::string>();
}

json token_json(const TokenInfo& t, bool with_owner, const IdentityStore& ids) {
  json j{{"token_id", t.token_id}, {"creation_time", t.created_ms}, {"expiry_time", t.expiry_ms}, {"comment", t.comment}};
  if (with_owner) {
    j["created_by_username"] = t.user_name;
    if (auto u = ids.user(t.user_name)) j["owner_id"] = u->id, j["created_by_id"] = u->id;
  }
  return j;
}

class IdentityApi : public std::enable_shared_from_this<IdentityApi> {
 public:
  IdentityApi(http::Server& srv, Auth& auth) : srv_(srv), auth_(auth) {}

  void install() {
    // SCIM
    on("GET", kScim + "/Me", [this](const Req&, Res& res, const Principal& who) {
      auto u = ids().user(who.user);
      if (!u) throw Refusal{404, "RESOURCE_DOES_NOT_EXIST", fmt::format("user '{}' does not exist", who.user)};
      send(res, user_json(*u));
    });
    on("GET", kScim + "/Users", [this](const Req& req, Res& res, const Principal&) { list_users(req, res); });
    on("POST", kScim + "/Users", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "create users");
      json b = body_of(req);
      User u = ids().add_user(string_field(b, "userName", true), string_field(b, "displayName", false), auth_.now_ms());
      if (b.contains("active") && b["active"].is_boolean() && !b["active"].get<bool>()) ids().set_active(u.user_name, false);
      if (b.contains("groups") && b["groups"].is_array())
        for (const auto& g : b["groups"]) ids().add_member(group_by_ref(g).name, u.user_name);
      send(res, user_json(*ids().user(u.user_name)), 201);
    });
    on("GET", kScim + R"(/Users/(\d{1,18}))", [this](const Req& req, Res& res, const Principal&) {
      send(res, user_json(user_by_id(req.matches[1])));
    });
    on("PATCH", kScim + R"(/Users/(\d{1,18}))", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "change users");
      User u = user_by_id(req.matches[1]);
      for (const auto& op : operations(body_of(req))) {
        // {"op": "replace", "path": "active", "value": false} or {"op": "replace", "value": {"active": false}}
        std::string path = op.value("path", "");
        json v = op.contains("value") ? op["value"] : json();
        if (path.empty() && v.is_object() && v.contains("active")) path = "active", v = v["active"];
        if (path != "active" || !v.is_boolean())
          throw Refusal{400, "INVALID_PARAMETER_VALUE", "supported: replace of 'active' with true or false"};
        ids().set_active(u.user_name, v.get<bool>());
      }
      send(res, user_json(*ids().user(u.user_name)));
    });
    on("DELETE", kScim + R"(/Users/(\d{1,18}))", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "delete users");
      ids().delete_user(user_by_id(req.matches[1]).user_name);
      res.status = 204;
    });
    on("GET", kScim + "/Groups", [this](const Req&, Res& res, const Principal&) {
      json items = json::array();
      for (const auto& g : ids().groups()) items.push_back(group_json(g));
      send(res, list_json(items));
    });
    on("POST", kScim + "/Groups", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "create groups");
      json b = body_of(req);
      Group g = ids().add_group(string_field(b, "displayName", true));
      if (b.contains("members") && b["members"].is_array())
        for (const auto& m : b["members"]) ids().add_member(g.name, user_by_ref(m).user_name);
      send(res, group_json(*ids().group(g.name)), 201);
    });
    on("GET", kScim + R"(/Groups/(\d{1,18}))", [this](const Req& req, Res& res, const Principal&) {
      send(res, group_json(group_by_id(req.matches[1])));
    });
    on("PATCH", kScim + R"(/Groups/(\d{1,18}))", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "change groups");
      patch_group(group_by_id(req.matches[1]), body_of(req));
      send(res, group_json(group_by_id(req.matches[1])));
    });
    on("DELETE", kScim + R"(/Groups/(\d{1,18}))", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "delete groups");
      ids().delete_group(group_by_id(req.matches[1]).name);
      res.status = 204;
    });
    token_routes();
    // The audit log: admins read everyone's entries, a user its own.
    srv_.Get(std::string(api::kPrefix) + "/audit", guarded([this](const Req& req, Res& res, const Principal& who) {
      AuditQuery q;
      q.user = req.get_param_value("user");
      if (!who.admin && q.user != who.user) {
        if (!q.user.empty())
          throw Refusal{403, "PERMISSION_DENIED", fmt::format("user '{}' may read only its own audit entries", who.user)};
        q.user = who.user;
      }
      q.since_ms = number(req, "since_ms", 0);
      q.limit = static_cast<int>(std::clamp<int64_t>(number(req, "limit", 1000), 1, 100000));
      json out = json::array();
      for (const auto& e : ids().audit_log(q))
        out.push_back({{"id", e.id}, {"time_ms", e.time_ms}, {"user", e.user}, {"method", e.method},
                       {"route", e.route}, {"object", e.object}, {"status", e.status}});
      send(res, {{"entries", out}});
    }), {1 << 20, nullptr});
  }

 private:
  using Fn = std::function<void(const Req&, Res&, const Principal&)>;
  IdentityStore& ids() { return auth_.identity(); }

  // Authenticates (users only: node tokens are refused) and renders every failure in Databricks' shape.
  http::Handler guarded(Fn f) {
    return [self = shared_from_this(), this, f](const Req& req, Res& res) {
      try {
        std::string why;
        auto who = auth_.authenticate(route::bearer(req), &why);
        if (!who) throw Refusal{401, "UNAUTHENTICATED", why};
        if (who->is_node()) throw Refusal{403, "PERMISSION_DENIED", "a node token may not use this API"};
        f(req, res, *who);
      } catch (const Refusal& r) {
        send(res, error_reply(r.status, r.code, r.message).body, r.status);
      } catch (const IdentityError& e) {
        send(res, error_reply(status_for(e.code()), e.code(), e.what()).body, status_for(e.code()));
      } catch (const HttpError& e) {
        send(res, error_reply(e.status, e.code, e.what()).body, e.status);
      }
    };
  }

  void on(const std::string& method, const std::string& pattern, Fn f) {
    http::Handler h = guarded(std::move(f));
    http::RouteOptions o{1 << 20, nullptr};
    if (method == "GET") srv_.Get(pattern, h, o);
    else if (method == "POST") srv_.Post(pattern, h, o);
    else if (method == "PATCH") srv_.Patch(pattern, h, o);
    else srv_.Delete(pattern, h, o);
  }

  static void admin_only(const Principal& who, const char* what) {
    if (!who.admin)
      throw Refusal{403, "PERMISSION_DENIED",
                    fmt::format("only workspace admins (group 'admins') may {}; user '{}' is not one", what, who.user)};
  }

  static int64_t number(const Req& req, const char* name, int64_t dflt) {
    if (!req.has_param(name)) return dflt;
    try {
      size_t used = 0;
      int64_t v = std::stoll(req.get_param_value(name), &used);
      if (used == req.get_param_value(name).size()) return v;
    } catch (const std::exception&) {
    }
    throw Refusal{400, "INVALID_PARAMETER_VALUE", fmt::format("query parameter {} is not a number", name)};
  }

  json user_json(const User& u) {
    json groups = json::array();
    for (const auto& g : ids().groups())
      if (g.members.count(u.user_name)) groups.push_back({{"display", g.name}, {"value", std::to_string(g.id)}});
    json j{{"schemas", {kUserSchema}}, {"id", std::to_string(u.id)}, {"userName", u.user_name},
           {"displayName", u.display_name}, {"active", u.active}, {"groups", groups},
           {"emails", json::array({{{"value", u.user_name}, {"primary", true}}})}};
    return j;
  }

  json group_json(const Group& g) {
    json members = json::array();
    for (const auto& m : g.members)
      if (auto u = ids().user(m)) members.push_back({{"display", m}, {"value", std::to_string(u->id)}});
    return {{"schemas", {kGroupSchema}}, {"id", std::to_string(g.id)}, {"displayName", g.name}, {"members", members}};
  }

  static json list_json(const json& items) {
    return {{"schemas", {kListSchema}}, {"totalResults", items.size()}, {"startIndex", 1},
            {"itemsPerPage", items.size()}, {"Resources", items}};
  }

  // ?filter=userName eq "alice" (the one filter the SDKs send to find a user by name).
  void list_users(const Req& req, Res& res) {
    std::string want;
    if (req.has_param("filter")) {
      static const std::regex eq(R"re(\s*userName\s+eq\s+"([^"]*)"\s*)re", std::regex::icase);
      std::smatch m;
      std::string f = req.get_param_value("filter");
      if (!std::regex_match(f, m, eq))
        throw Refusal{400, "INVALID_PARAMETER_VALUE", "supported filter: userName eq \"NAME\""};
      want = m[1];
    }
    json items = json::array();
    for (const auto& u : ids().users())
      if (want.empty() || u.user_name == want) items.push_back(user_json(u));
    send(res, list_json(items));
  }

  User user_by_id(const std::string& id) {
    auto u = ids().user_by_id(std::stoll(id));
    if (!u) throw Refusal{404, "RESOURCE_DOES_NOT_EXIST", fmt::format("no user with id {}", id)};
    return *u;
  }
  Group group_by_id(const std::string& id) {
    auto g = ids().group_by_id(std::stoll(id));
    if (!g) throw Refusal{404, "RESOURCE_DOES_NOT_EXIST", fmt::format("no group with id {}", id)};
    return *g;
  }
  // {"value": "<id>"}
  User user_by_ref(const json& ref) {
    if (!ref.is_object() || !ref.contains("value") || !ref["value"].is_string())
      throw Refusal{400, "INVALID_PARAMETER_VALUE", "a member is {\"value\": \"<user id>\"}"};
    std::string v = ref["value"];
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 18)
      throw Refusal{400, "INVALID_PARAMETER_VALUE", fmt::format("'{}' is not a user id", v.substr(0, 40))};
    return user_by_id(v);
  }
  Group group_by_ref(const json& ref) {
    if (!ref.is_object() || !ref.contains("value") || !ref["value"].is_string())
      throw Refusal{400, "INVALID_PARAMETER_VALUE", "a group is {\"value\": \"<group id>\"}"};
    std::string v = ref["value"];
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 18)
      throw Refusal{400, "INVALID_PARAMETER_VALUE", fmt::format("'{}' is not a group id", v.substr(0, 40))};
    return group_by_id(v);
  }

  static json operations(const json& b) {
    if (!b.contains("Operations") || !b["Operations"].is_array())
      throw Refusal{400, "INVALID_PARAMETER_VALUE", "a SCIM PATCH needs an 'Operations' list"};
    for (const auto& op : b["Operations"])
      if (!op.is_object() || !op.contains("op") || !op["op"].is_string())
        throw Refusal{400, "INVALID_PARAMETER_VALUE", "each operation needs 'op'"};
    return b["Operations"];
  }

  // add members: {"op":"add","path":"members","value":[{"value":"<id>"}]} (or "value":{"members":[...]});
  // remove: {"op":"remove","path":"members[value eq \"<id>\"]"}.
  void patch_group(const Group& g, const json& b) {
    static const std::regex remove_one(R"re(members\[value eq "(\d{1,18})"\])re");
    for (const auto& op : operations(b)) {
      std::string kind = op["op"], path = op.value("path", "");
      std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
      json v = op.contains("value") ? op["value"] : json();
      if (path.empty() && v.is_object() && v.contains("members")) path = "members", v = v["members"];
      std::smatch m;
      if (kind == "add" && path == "members" && v.is_array()) {
        for (const auto& ref : v) ids().add_member(g.name, user_by_ref(ref).user_name);
      } else if (kind == "remove" && std::regex_match(path, m, remove_one)) {
        ids().remove_member(g.name, user_by_id(m[1]).user_name);
      } else if (kind == "remove" && path == "members" && v.is_array()) {
        for (const auto& ref : v) ids().remove_member(g.name, user_by_ref(ref).user_name);
      } else {
        throw Refusal{400, "INVALID_PARAMETER_VALUE", "supported: add or remove of 'members'"};
      }
    }
  }

  static int64_t lifetime(const json& b) {
    if (!b.contains("lifetime_seconds") || b["lifetime_seconds"].is_null()) return 0;
    if (!b["lifetime_seconds"].is_number_integer())
      throw Refusal{400, "INVALID_PARAMETER_VALUE", "lifetime_seconds must be an integer"};
    int64_t s = b["lifetime_seconds"].get<int64_t>();
    if (s < -1 || s > int64_t{10} * 365 * 86400)
      throw Refusal{400, "INVALID_PARAMETER_VALUE", "lifetime_seconds must be -1 (no expiry) to 10 years"};
    return s;
  }

  json created(const std::pair<std::string, TokenInfo>& t) {
    return {{"token_value", t.first}, {"token_info", token_json(t.second, false, ids())}};
  }

  void token_routes() {
    on("POST", "/api/2.0/token/create", [this](const Req& req, Res& res, const Principal& who) {
      json b = body_of(req);
      send(res, created(auth_.create_token(who.user, lifetime(b), string_field(b, "comment", false))));
    });
    on("GET", "/api/2.0/token/list", [this](const Req&, Res& res, const Principal& who) {
      json out = json::array();
      for (const auto& t : ids().tokens(who.user)) out.push_back(token_json(t, false, ids()));
      send(res, {{"token_infos", out}});
    });
    on("POST", "/api/2.0/token/delete", [this](const Req& req, Res& res, const Principal& who) {
      std::string id = string_field(body_of(req), "token_id", true);
      auto t = ids().token(id);
      if (!t || (t->user_name != who.user && !who.admin))
        throw Refusal{404, "RESOURCE_DOES_NOT_EXIST", fmt::format("no token {} of user '{}'", id, who.user)};
      ids().delete_token(id);
      send(res, json::object());
    });
    // The admin's view: every user's tokens; revoke any; create one for another user.
    on("GET", "/api/2.0/token-management/tokens", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "manage other users' tokens");
      json out = json::array();
      for (const auto& t : ids().tokens(req.get_param_value("created_by_username"))) out.push_back(token_json(t, true, ids()));
      send(res, {{"token_infos", out}});
    });
    on("GET", R"(/api/2.0/token-management/tokens/([0-9a-f]{1,64}))", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "manage other users' tokens");
      auto t = ids().token(req.matches[1]);
      if (!t) throw Refusal{404, "RESOURCE_DOES_NOT_EXIST", fmt::format("no token {}", req.matches[1].str())};
      send(res, {{"token_info", token_json(*t, true, ids())}});
    });
    on("DELETE", R"(/api/2.0/token-management/tokens/([0-9a-f]{1,64}))", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "manage other users' tokens");
      if (!ids().delete_token(req.matches[1]))
        throw Refusal{404, "RESOURCE_DOES_NOT_EXIST", fmt::format("no token {}", req.matches[1].str())};
      send(res, json::object());
    });
    // application_id names the user (Databricks: a service principal's application id).
    on("POST", "/api/2.0/token-management/on-behalf-of/tokens", [this](const Req& req, Res& res, const Principal& who) {
      admin_only(who, "create tokens for other users");
      json b = body_of(req);
      send(res, created(auth_.create_token(string_field(b, "application_id", true), lifetime(b),
                                         string_field(b, "comment", false))));
    });
  }

  http::Server& srv_;
  Auth& auth_;
};

}  // namespace

void install_identity_routes(http::Server& srv, Auth& auth) {
  std::make_shared<IdentityApi>(srv, auth)->install();  // the routes hold it
}

}  // namespace air::server
