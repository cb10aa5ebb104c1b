// Every route x every role -> the status docs/security.md says, read from that file: the table is the
// contract and this test its proof. A real workspace (SQLite file, the server core on loopback) with five
// users, a group, two runs, a secret scope with ACLs, a volume with grants; each state-changing cell expected to succeed
// gets a fresh one.
// A route the server registers without a row in the table fails the test.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/base/sha256.h"
#include "server/api/router.h"
#include "server/api/secrets.h"
#include "server/http/server.h"
#include "server/workspace/workspace.h"
#include "tests/server/recording_backend.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace air::server;

namespace {

const std::vector<std::string> kRoles = {"admin", "owner",      "viewer",  "manager", "other", "group",
                                         "node",  "node_other", "revoked", "expired", "none"};

struct Row {
  std::string method, path, body;
  std::map<std::string, int> expect;  // role -> status
  int line = 0;
};

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line.substr(1));
  std::string c;
  while (std::getline(ss, c, '|')) {
    auto b = c.find_first_not_of(" `"), e = c.find_last_not_of(" `");
    out.push_back(b == std::string::npos ? "" : c.substr(b, e - b + 1));
  }
  return out;
}

// The table under "## Every route, every role".
std::vector<Row> read_table() {
  std::ifstream in(std::string(AIR_TEST_DATA_DIR) + "/../docs/security.md");
  REQUIRE(in);
  std::vector<Row> rows;
  std::string line;
  bool in_section = false;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.rfind("## ", 0) == 0) in_section = line == "## Every route, every role";
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    auto c = cells(line);
    REQUIRE(c.size() == 2 + kRoles.size());
    Row r;
    r.method = c[0].substr(0, c[0].find(' '));
    r.path = c[0].substr(c[0].find(' ') + 1);
    r.body = c[1];
    for (size_t i = 0; i < kRoles.size(); ++i) r.expect[kRoles[i]] = std::stoi(c[2 + i]);
    r.line = n;
    rows.push_back(r);
  }
  return rows;
}

const char* kWorkload = "experiment_name: t\ncompute:\n  accelerator_type: CPU_1xHOST\n  num_accelerators: 1\ncommand: echo hi\n";

// The workspace of the table's roles.
struct Team {
  std::string home;
  std::atomic<int64_t> clock{1'800'000'000'000};
  std::vector<NodeLaunch> started;
  std::unique_ptr<Workspace> ws;
  http::Server srv;
  std::thread thread;
  int port = 0;
  std::map<std::string, std::string> token;  // role -> bearer token
  std::map<std::string, std::string> vars;   // {run}, {digest}, ...

  Team() {
    char t[] = "/tmp/air-security-test-XXXXXX";
    home = ::mkdtemp(t);
    WorkspaceOptions o;
    o.home = home;
    o.ticker = false;
    o.adopt_snapshots_from = home + "/cache/snapshots";  // as `air server` sets it
    o.now_ms = [this] { return clock.load(); };
    ws = std::make_unique<Workspace>(o, std::make_unique<RecordingBackend>(started));
    ws->set_url("http://127.0.0.1:1");
    ws->start();
    token["admin"] = ws->auth().create_admin_token();
    install_routes(srv, *ws);
    port = srv.bind("127.0.0.1", 0);
    REQUIRE(port > 0);
    thread = std::thread([this] { srv.listen(); });
    setup();
  }
  ~Team() {
    srv.stop();
    thread.join();
    ws.reset();
    fs::remove_all(home);
  }

  httplib::Result call(const std::string& method, const std::string& path, const std::string& body,
                       const std::string& tok, const char* type = "application/json") {
    httplib::Client c("127.0.0.1", port);
    if (!tok.empty()) c.set_bearer_token_auth(tok);
    if (method == "GET") return c.Get(path.c_str());
    if (method == "POST") return c.Post(path.c_str(), body, type);
    if (method == "PUT") return c.Put(path.c_str(), body, type);
    if (method == "PATCH") return c.Patch(path.c_str(), body, type);
    return c.Delete(path.c_str(), body, type);
  }
  json ok(const std::string& method, const std::string& path, const json& body, const std::string& role) {
    auto r = call(method, path, body.dump(), token.at(role));
    REQUIRE(r);
    INFO(method << " " << path << " -> " << r->status << " " << r->body);
    REQUIRE(r->status / 100 == 2);
    return r->body.empty() ? json() : json::parse(r->body);
  }

  std::string user(const std::string& name) {
    json u = ok("POST", "/api/2.0/preview/scim/v2/Users", {{"userName", name}}, "admin");
    return u["id"];
  }
  std::string pat(const std::string& name, int64_t lifetime = 0, const std::string& comment = "") {
    json t = ok("POST", "/api/2.0/token-management/on-behalf-of/tokens",
                {{"application_id", name}, {"lifetime_seconds", lifetime}, {"comment", comment}}, "admin");
    return t["token_value"];
  }

  void setup() {
    user("alice");
    user("bob");
    user("carol");
    vars["{user_id}"] = user("dave");
    std::string erin = user("erin");
    json g = ok("POST", "/api/2.0/preview/scim/v2/Groups", {{"displayName", "ml"}, {"members", {{{"value", erin}}}}}, "admin");
    vars["{group_id}"] = g["id"];
    token["owner"] = pat("alice");
    token["viewer"] = pat("bob");
    token["manager"] = pat("carol");
    token["other"] = pat("dave");
    token["group"] = pat("erin");
    token["revoked"] = pat("alice", 0, "to revoke");
    token["expired"] = pat("alice", 60);
    json third = ok("POST", "/api/2.0/token-management/on-behalf-of/tokens", {{"application_id", "alice"}}, "admin");
    vars["{token_id}"] = third["token_info"]["token_id"];
    revoke_one_of_alices();

    // Scope team: alice creates (MANAGE), grants bob READ, carol MANAGE, group ml READ.
    ok("POST", "/api/2.0/secrets/scopes/create", {{"scope", "team"}}, "owner");
    ok("POST", "/api/2.0/secrets/put", {{"scope", "team"}, {"key", "hf_token"}, {"string_value", "hf_secret_value"}}, "owner");
    ok("POST", "/api/2.0/secrets/acls/put", {{"scope", "team"}, {"principal", "bob"}, {"permission", "READ"}}, "owner");
    ok("POST", "/api/2.0/secrets/acls/put", {{"scope", "team"}, {"principal", "carol"}, {"permission", "MANAGE"}}, "owner");
    ok("POST", "/api/2.0/secrets/acls/put", {{"scope", "team"}, {"principal", "ml"}, {"permission", "READ"}}, "owner");

    // main.default is the admin's: alice may make volumes there once granted CREATE_VOLUME (docs/volumes.md).
    ok("PATCH", "/api/2.1/unity-catalog/permissions/schema/main.default",
       {{"changes", {{{"principal", "alice"}, {"add", {"CREATE_VOLUME"}}}}}}, "admin");
    // Volume main.default.v: alice creates it (its owner) with a file and an empty folder, grants bob
    // READ_VOLUME, carol READ_VOLUME and WRITE_VOLUME, group ml READ_VOLUME.
    auto f = call("PUT", "/api/2.0/fs/files/Volumes/main/default/v/a.txt", "abc", token["owner"], "application/octet-stream");
    REQUIRE((f && f->status == 204));
    auto d = call("PUT", "/api/2.0/fs/directories/Volumes/main/default/v/empty", "", token["owner"]);
    REQUIRE((d && d->status == 204));
    ok("PATCH", "/api/2.1/unity-catalog/permissions/volume/main.default.v",
       {{"changes", {{{"principal", "bob"}, {"add", {"READ_VOLUME"}}},
                     {{"principal", "carol"}, {"add", {"READ_VOLUME", "WRITE_VOLUME"}}},
                     {{"principal", "ml"}, {"add", {"READ_VOLUME"}}}}}},
       "owner");

    // The code snapshot and alice's run, which names the volume.
    std::string snap = "snapshot bytes";
    vars["{digest}"] = air::sha256_hex(snap);
    vars["{new_digest}"] = air::sha256_hex("another snapshot");
    auto put = call("PUT", "/api/air/v1/snapshots/" + vars["{digest}"], snap, token["owner"], "application/octet-stream");
    REQUIRE(put);
    REQUIRE(put->status == 201);
    std::string yaml = std::string(kWorkload) + "env_variables:\n  OUT: /Volumes/main/default/v\n" +
                       "secrets:\n  HF_TOKEN: team/hf_token\npermissions:\n  - user_name: bob\n    level: CAN_VIEW\n"
                       "  - user_name: carol\n    level: CAN_MANAGE\n  - group_name: ml\n    level: CAN_VIEW\n";
    json run = ok("POST", "/api/air/v1/runs",
                  {{"workload_yaml", yaml}, {"file_name", "t.yaml"}, {"snapshot_digest", vars["{digest}"]}}, "owner");
    vars["{run}"] = run["run_id"];
    REQUIRE(!started.empty());
    token["node"] = started.back().token;
    json info = ok("GET", "/api/air/v1/runs/" + vars["{run}"], json(), "owner");
    vars["{mlflow_run}"] = info["attempts"][0]["mlflow_run_id"];
    REQUIRE(!vars["{mlflow_run}"].empty());
    ok("POST", "/api/air/v1/runs", {{"workload_yaml", kWorkload}, {"file_name", "t.yaml"}}, "admin");
    token["node_other"] = started.back().token;
    REQUIRE(token["node_other"] != token["node"]);


    clock += 120'000;  // the expired token's 60 s are over
  }

  void revoke_one_of_alices() {
    // Alice revokes the one made to be revoked; her own keeps working.
    json mine = ok("GET", "/api/2.0/token/list", json(), "owner");
    std::string id;
    for (const auto& t : mine["token_infos"])
      if (t["comment"] == "to revoke") id = t["token_id"];
    REQUIRE(!id.empty());
    ok("POST", "/api/2.0/token/delete", {{"token_id", id}}, "owner");
    auto gone = call("GET", "/api/2.0/preview/scim/v2/Me", "", token["revoked"]);
    REQUIRE((gone && gone->status == 401));
    auto still = call("GET", "/api/2.0/preview/scim/v2/Me", "", token["owner"]);
    REQUIRE((still && still->status == 200));
  }

  std::string fill(std::string s) const {
    for (const auto& [k, v] : vars)
      for (size_t at; (at = s.find(k)) != std::string::npos;) s.replace(at, k.size(), v);
    return s;
  }

  std::string body(const std::string& name) const {
    static const std::map<std::string, json> bodies = {
        {"submit", {{"workload_yaml", kWorkload}, {"file_name", "t.yaml"}}},
        {"status", {{"state", "RUNNING"}}},
        {"scope_new", {{"scope", "fresh"}}},
        {"scope_team", {{"scope", "team"}}},
        {"put", {{"scope", "team"}, {"key", "k"}, {"string_value", "v"}}},
        {"secret_key", {{"scope", "team"}, {"key", "hf_token"}}},
        {"acl_put", {{"scope", "team"}, {"principal", "dave"}, {"permission", "READ"}}},
        {"acl_principal", {{"scope", "team"}, {"principal", "bob"}}},
        {"metric", {{"run_id", "{mlflow_run}"}, {"key", "loss"}, {"value", 1.5}, {"timestamp", 1}, {"step", 1}}},
        {"user_new", {{"userName", "zed"}}},
        {"deactivate", {{"Operations", {{{"op", "replace"}, {"path", "active"}, {"value", false}}}}}},
        {"group_new", {{"displayName", "fresh"}}},
        {"add_member", {{"Operations", {{{"op", "add"}, {"path", "members"}, {"value", {{{"value", "{user_id}"}}}}}}}}},
        {"token_new", {{"comment", "ci"}, {"lifetime_seconds", 3600}}},
        {"token_id", {{"token_id", "{token_id}"}}},
        {"on_behalf", {{"application_id", "dave"}}},
        {"vol_grant", {{"changes", {{{"principal", "dave"}, {"add", {"READ_VOLUME"}}}}}}},
        {"catalog_new", {{"name", "fresh"}}},
        {"schema_new", {{"catalog_name", "main"}, {"name", "fresh"}}},
        {"catalog_grant", {{"changes", {{{"principal", "dave"}, {"add", {"CREATE_SCHEMA"}}}}}}},
        {"schema_grant", {{"changes", {{{"principal", "dave"}, {"add", {"CREATE_VOLUME"}}}}}}},
        {"quota_set", {{"kind", "group"}, {"name", "ml"}, {"max_gpus", 4}}},
        {"quota_rm", {{"kind", "group"}, {"name", "nobody"}}},  // none set: an admin is told so (404)
    };
    if (name.empty()) return {};
    if (name == "log") return "1700000000000 o hello\n";
    if (name == "snapshot") return "another snapshot";
    if (name == "file") return "new file";
    REQUIRE(bodies.count(name));
    return fill(bodies.at(name).dump());
  }
};

bool mutating(const Row& r) { return r.method != "GET"; }

}  // namespace

TEST_CASE("security: every route x every role gives the status docs/security.md says") {
  std::vector<Row> rows = read_table();
  REQUIRE(rows.size() > 40);
  std::unique_ptr<Team> shared = std::make_unique<Team>();

  // No route may be missing: each registered (method, pattern) is matched by some row's path.
  for (const auto& route : shared->srv.routes()) {
    std::regex re(route.pattern);
    bool covered = false;
    for (const auto& r : rows) {
      std::string path = shared->fill(r.path);
      path = path.substr(0, path.find('?'));
      covered = covered || (r.method == route.method && std::regex_match(path, re));
    }
    INFO("route " << route.method << " " << route.pattern << " has no row in docs/security.md");
    CHECK(covered);
  }
  // The secrets routes are one pattern: each endpoint behind it needs its row.
  for (const auto& e : air::server::secrets_endpoints()) {
    bool covered = false;
    for (const auto& r : rows)
      covered = covered || (r.method == e.method && r.path.substr(0, r.path.find('?')) == std::string("/api/2.0/secrets/") + e.op);
    INFO("secrets endpoint " << e.method << " " << e.op << " has no row in docs/security.md");
    CHECK(covered);
  }

  for (const auto& r : rows)
    for (const auto& role : kRoles) {
      // A change that is expected to succeed gets its own workspace; an expected refusal changes nothing
      // (and when a mutated rule lets it through, this cell fails anyway).
      std::unique_ptr<Team> fresh;
      if (mutating(r) && r.expect.at(role) / 100 == 2) fresh = std::make_unique<Team>();
      Team& t = fresh ? *fresh : *shared;
      std::string tok = role == "none" ? "" : t.token.at(role);
      std::string body = t.body(r.body);
      const char* type = r.body == "log" || r.body == "snapshot" || r.body == "file" ? "application/octet-stream"
                                                                                      : "application/json";
      auto res = t.call(r.method, t.fill(r.path), body, tok, type);
      REQUIRE(res);
      INFO("docs/security.md:" << r.line << ": " << r.method << " " << r.path << " as " << role << " -> "
                               << res->status << " " << res->body.substr(0, 300));
      CHECK(res->status == r.expect.at(role));
      // A refusal names what is missing: PERMISSION_DENIED / UNAUTHENTICATED with a message; a 403 says which
      // permission the caller lacks (or what the token may do instead).
      if (res->status == 403 || res->status == 401) CHECK(res->body.find("message") != std::string::npos);
      if (res->status == 403)
        CHECK(std::regex_search(res->body, std::regex(R"(lacks [A-Z_]+ (on|permission)|lacks ownership|only|node token)")));
    }
}

TEST_CASE("security: no answer and no audit entry carries a token or a secret value") {
  Team t;
  auto r = t.call("GET", "/api/2.0/secrets/get?scope=team&key=hf_token", "", t.token["viewer"]);
  REQUIRE(r);
  REQUIRE(r->status == 200);
  auto denied = t.call("GET", "/api/2.0/secrets/get?scope=team&key=hf_token", "", t.token["other"]);
  REQUIRE(denied);
  CHECK(denied->status == 403);
  CHECK(denied->body.find("user 'dave' lacks READ permission on secret scope 'team'") != std::string::npos);
  json log = t.ok("GET", "/api/air/v1/audit", json(), "admin");
  std::string all = log.dump();
  CHECK(all.find("hf_secret_value") == std::string::npos);
  for (const auto& [role, tok] : t.token)
    if (!tok.empty()) CHECK(all.find(tok) == std::string::npos);
  // Both reads are there, with who and the result.
  int reads = 0;
  for (const auto& e : log["entries"])
    if (e["route"] == "/api/2.0/secrets/get" && e["object"] == "team/hf_token")
      reads += (e["user"] == "bob" && e["status"] == 200) || (e["user"] == "dave" && e["status"] == 403);
  CHECK(reads == 2);
  // The database file holds neither the value nor a token in clear.
  std::ifstream db(t.home + "/workspace.db", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(db)), {});
  std::ifstream wal(t.home + "/workspace.db-wal", std::ios::binary);
  bytes += std::string((std::istreambuf_iterator<char>(wal)), {});
  CHECK(bytes.find("hf_secret_value") == std::string::npos);
  for (const auto& [role, tok] : t.token)
    if (!tok.empty()) CHECK(bytes.find(tok) == std::string::npos);
}

TEST_CASE("security: a revoked token ends an open log follow") {
  Team t;
  std::string tok = t.pat("bob");
  std::string path = t.fill("/api/air/v1/runs/{run}/attempts/1/nodes/0/logs?offset=0&wait_ms=20000");
  std::thread revoke([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    json mine = t.ok("GET", "/api/2.0/token-management/tokens?created_by_username=bob", json(), "admin");
    for (const auto& x : mine["token_infos"]) {
      auto r = t.call("DELETE", "/api/2.0/token-management/tokens/" + x["token_id"].get<std::string>(), "", t.token["admin"]);
      REQUIRE(r);
    }
  });
  auto start = std::chrono::steady_clock::now();
  auto r = t.call("GET", path, "", tok);
  revoke.join();
  REQUIRE(r);
  CHECK(r->status == 401);
  CHECK(r->body.find("revoked") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}
