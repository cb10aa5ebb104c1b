// Two people in one workspace (issue 40, items 3-7): snapshots are not capabilities, catalogs and schemas
// have owners, the audit log names the caller and the object the handler used, the bootstrap admin token is
// one listed and revocable token, and what a caller may not see answers as if it did not exist. A real
// workspace (SQLite file, the server core on loopback, every route installed); only the backend records.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/base/sha256.h"
#include "core/client/client.h"
#include "server/api/router.h"
#include "server/http/server.h"
#include "server/workspace/workspace.h"
#include "tests/server/recording_backend.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace air::server;

namespace {

struct Pair {
  std::string home;
  std::vector<NodeLaunch> started;
  std::unique_ptr<Workspace> ws;
  std::unique_ptr<http::Server> srv;
  std::thread thread;
  int port = 0;
  std::string admin, alice, bob;

  Pair() {
    char t[] = "/tmp/air-tenant-rules-XXXXXX";
    home = ::mkdtemp(t);
    open();
    for (const char* u : {"alice", "bob"}) ws->auth().identity().add_user(u, "", 0);
    alice = ws->auth().create_token("alice", 0, "").first;
    bob = ws->auth().create_token("bob", 0, "").first;
  }
  ~Pair() {
    close();
    fs::remove_all(home);
  }
  // Starts the workspace (again, on the same home: a restart).
  void open() {
    WorkspaceOptions o;
    o.home = home;
    o.ticker = false;
    o.adopt_snapshots_from = home + "/cache/snapshots";  // as `air server` sets it
    ws = std::make_unique<Workspace>(o, std::make_unique<RecordingBackend>(started));
    ws->set_url("http://127.0.0.1:1");
    ws->start();
    admin = ws->auth().create_admin_token();
    srv = std::make_unique<http::Server>();
    install_routes(*srv, *ws);
    port = srv->bind("127.0.0.1", 0);
    REQUIRE(port > 0);
    thread = std::thread([this] { srv->listen(); });
  }
  void close() {
    srv->stop();
    thread.join();
    srv.reset();
    ws.reset();
  }

  httplib::Client as(const std::string& tok) {
    httplib::Client c("127.0.0.1", port);
    if (!tok.empty()) c.set_bearer_token_auth(tok);
    return c;
  }
  // Any method, with a body (a GET too: the forged-parameter requests send one).
  httplib::Result send(const std::string& tok, const std::string& method, const std::string& path,
                       const std::string& body = {}, const std::string& type = "application/json") {
    httplib::Request req;
    req.method = method;
    req.path = path;
    req.body = body;
    if (!body.empty()) req.set_header("Content-Type", type);
    if (!tok.empty()) req.set_header("Authorization", "Bearer " + tok);
    return as("").send(req);
  }
  httplib::Result submit(const std::string& tok, const std::string& extra, const std::string& digest = {}) {
    std::string yaml = "experiment_name: t\ncompute:\n  accelerator_type: CPU_1xHOST\n  num_accelerators: 1\n"
                       "command: echo hi\n" + extra;
    json b{{"workload_yaml", yaml}, {"file_name", "t.yaml"}};
    if (!digest.empty()) b["snapshot_digest"] = digest;
    return send(tok, "POST", "/api/air/v1/runs", b.dump());
  }
  httplib::Result grant(const std::string& tok, const std::string& type, const std::string& name,
                        const std::string& who, const std::string& privilege) {
    json change{{"principal", who}, {"add", {privilege}}};
    return send(tok, "PATCH", "/api/2.1/unity-catalog/permissions/" + type + "/" + name,
                json{{"changes", {change}}}.dump());
  }
  std::vector<json> audit(const std::string& route, const std::string& method = {}) {
    std::vector<json> out;
    json all = json::parse(as(admin).Get("/api/air/v1/audit")->body);
    for (const auto& e : all["entries"])
      if (e["route"] == route && (method.empty() || e["method"] == method)) out.push_back(e);
    return out;
  }
};

std::string message(const httplib::Result& r) {
  json j = json::parse(r->body);
  return j.contains("message") ? j["message"].get<std::string>() : j["error"]["message"].get<std::string>();
}

std::string snap_path(const std::string& digest) { return "/api/air/v1/snapshots/" + digest; }

}  // namespace

TEST_CASE("tenant: the workspace adopts its admin's cached archive without a copy, and nobody else's") {
  Pair t;
  const std::string cache = t.home + "/cache/snapshots";
  fs::create_directories(cache);
  auto cached = [&](const std::string& digest, const std::string& bytes, mode_t mode = 0644) {
    std::string path = cache + "/" + digest + ".tar.zst";
    std::ofstream(path, std::ios::binary) << bytes;
    ::chmod(path.c_str(), mode);
    return path;
  };
  auto adopt = [&](const std::string& tok, const std::string& digest) {
    return t.send(tok, "POST", snap_path(digest) + "/adopt");
  };
  std::string bytes = "the admin's code", digest = air::sha256_hex(bytes);
  std::string file = cached(digest, bytes);

  // Bob (a user, not an admin) cannot take it: the file being there proves nothing about what he holds.
  auto bobs = adopt(t.bob, digest);
  CHECK(bobs->status == 409);
  CHECK(message(bobs).find("only a workspace admin's own archive is adopted") != std::string::npos);
  CHECK(t.send(t.bob, "HEAD", snap_path(digest))->status == 404);
  CHECK_FALSE(t.ws->snapshots().blobs().has(digest));

  // Refusals, each with its reason (the CLI then uploads): no such file, bytes that hash to something else, a
  // file others may write, a symbolic link.
  std::string missing = air::sha256_hex("not cached");
  CHECK(message(adopt(t.admin, missing)).find("no such file") != std::string::npos);
  std::string lie = air::sha256_hex("what the name says");
  cached(lie, "other bytes");
  auto lied = adopt(t.admin, lie);
  CHECK(lied->status == 409);
  CHECK(message(lied).find("do not hash to the digest") != std::string::npos);
  std::string shared = "group-writable", shared_digest = air::sha256_hex(shared);
  cached(shared_digest, shared, 0664);
  CHECK(message(adopt(t.admin, shared_digest)).find("writable by others") != std::string::npos);
  std::string linked = "through a link", linked_digest = air::sha256_hex(linked);
  std::string target = t.home + "/elsewhere";
  std::ofstream(target, std::ios::binary) << linked;
  REQUIRE(::symlink(target.c_str(), (cache + "/" + linked_digest + ".tar.zst").c_str()) == 0);
  CHECK(adopt(t.admin, linked_digest)->status == 409);
  for (const auto& d : {missing, lie, shared_digest, linked_digest}) CHECK_FALSE(t.ws->snapshots().blobs().has(d));

  // The admin's own archive: linked, the same inode (no copy), readable as any upload, the admin its uploader.
  auto ok = adopt(t.admin, digest);
  REQUIRE(ok->status == 201);
  CHECK(json::parse(ok->body)["adopted"] == true);
  CHECK(json::parse(ok->body)["bytes"] == bytes.size());
  struct stat a {}, b {};
  REQUIRE(::stat(file.c_str(), &a) == 0);
  REQUIRE(::stat(t.ws->snapshots().blobs().path(digest).c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK(t.send(t.admin, "GET", snap_path(digest))->body == bytes);
  CHECK(t.ws->snapshots().uploads().uploaders(digest) == std::vector<std::string>{"admin"});
  auto again = adopt(t.admin, digest);
  CHECK(again->status == 200);
  CHECK(json::parse(again->body)["existed"] == true);
  // The CLI's cache dropping its file leaves the blob.
  fs::remove(file);
  CHECK(t.send(t.admin, "GET", snap_path(digest))->body == bytes);
  REQUIRE(t.submit(t.admin, "", digest)->status == 201);
}

TEST_CASE("tenant: a snapshot digest is a name, not a key") {
  Pair t;
  std::string bytes = "alice's code", digest = air::sha256_hex(bytes), never = air::sha256_hex("nobody's");
  // A new digest answers 404 to everyone, admins and users alike (a non-admin can run code).
  for (const auto& tok : {t.admin, t.alice, t.bob}) CHECK(t.send(tok, "HEAD", snap_path(never))->status == 404);
  auto up = t.send(t.alice, "PUT", snap_path(digest), bytes, "application/octet-stream");
  REQUIRE(up->status == 201);
  CHECK(json::parse(up->body)["existed"] == false);
  // Her unchanged tree uploads nothing: HEAD finds it, a PUT reads nothing and says it existed.
  CHECK(t.send(t.alice, "HEAD", snap_path(digest))->status == 200);
  auto again = t.send(t.alice, "PUT", snap_path(digest), bytes, "application/octet-stream");
  CHECK(again->status == 200);
  CHECK(json::parse(again->body)["existed"] == true);
  REQUIRE(t.submit(t.alice, "", digest)->status == 201);

  // Bob: her digest answers exactly as one nobody uploaded.
  auto get_hers = t.send(t.bob, "GET", snap_path(digest)), get_none = t.send(t.bob, "GET", snap_path(never));
  CHECK(get_hers->status == 404);
  CHECK(t.send(t.bob, "HEAD", snap_path(digest))->status == 404);
  auto strip = [](std::string s, const std::string& d) {
    for (size_t at; (at = s.find(d)) != std::string::npos;) s.replace(at, d.size(), "D");
    return s;
  };
  CHECK(strip(get_hers->body, digest) == strip(get_none->body, never));
  CHECK(get_hers->body.find("alice") == std::string::npos);
  auto run_hers = t.submit(t.bob, "", digest), run_none = t.submit(t.bob, "", never);
  CHECK(run_hers->status == 400);
  CHECK(strip(run_hers->body, digest) == strip(run_none->body, never));
  // A PUT of other bytes under her digest fails its hash check, as it would for a new digest.
  auto wrong = t.send(t.bob, "PUT", snap_path(digest), "bob's guess", "application/octet-stream");
  auto wrong_new = t.send(t.bob, "PUT", snap_path(never), "bob's guess", "application/octet-stream");
  CHECK(wrong->status == 400);
  CHECK(strip(wrong->body, digest) == strip(wrong_new->body, never));
  CHECK(t.send(t.bob, "GET", snap_path(digest))->status == 404);
  // Bob's PUT of the very bytes is answered as a new upload (nothing says they were there); having sent
  // them, he has the code anyway and may name the digest.
  auto same = t.send(t.bob, "PUT", snap_path(digest), bytes, "application/octet-stream");
  CHECK(same->status == 201);
  CHECK(json::parse(same->body)["existed"] == false);
  CHECK(t.send(t.bob, "HEAD", snap_path(digest))->status == 200);
  CHECK(t.submit(t.bob, "", digest)->status == 201);
  CHECK(t.ws->snapshots().uploads().uploaders(digest) == std::vector<std::string>{"alice", "bob"});
}

TEST_CASE("tenant: CAN_VIEW on a run made from a snapshot lets a user read it and name it") {
  Pair t;
  t.ws->auth().identity().add_user("carol", "", 0);
  std::string carol = t.ws->auth().create_token("carol", 0, "").first;
  std::string bytes = "shared code", digest = air::sha256_hex(bytes);
  REQUIRE(t.send(t.alice, "PUT", snap_path(digest), bytes, "application/octet-stream")->status == 201);
  REQUIRE(t.submit(t.alice, "permissions:\n  - user_name: carol\n    level: CAN_VIEW\n", digest)->status == 201);
  CHECK(t.send(carol, "HEAD", snap_path(digest))->status == 200);
  CHECK(t.submit(carol, "", digest)->status == 201);
  CHECK(t.send(t.bob, "HEAD", snap_path(digest))->status == 404);
}

TEST_CASE("tenant: nobody creates a volume in a schema that is not theirs") {
  Pair t;
  // A fresh workspace: main and main.default are the admin's; users may use them, not create volumes in
  // main.default.
  auto cat = json::parse(t.as(t.bob).Get("/api/2.1/unity-catalog/catalogs/main")->body);
  CHECK(cat["owner"] == t.ws->auth().identity().bootstrap_admin());
  auto grants = json::parse(t.as(t.bob).Get("/api/2.1/unity-catalog/permissions/schema/main.default")->body);
  CHECK(grants == json::parse(R"({"privilege_assignments":[{"principal":"users","privileges":["USE_SCHEMA"]}]})"));
  const std::string ckpt = "/api/2.0/fs/files/Volumes/main/default/air_checkpoints/x";
  auto squat = t.send(t.bob, "PUT", ckpt, "mine", "application/octet-stream");
  CHECK(squat->status == 403);
  CHECK(message(squat) == "user 'bob' lacks CREATE_VOLUME on schema main.default (owner: " +
                              t.ws->auth().identity().bootstrap_admin() +
                              "), so may not create volume main.default.air_checkpoints there; its owner can grant "
                              "it: air volumes grant main.default bob CREATE_VOLUME");
  auto run = t.submit(t.bob, "env_variables:\n  OUT: /Volumes/main/default/air_checkpoints\n");
  CHECK(run->status == 403);
  CHECK(message(run).find("lacks CREATE_VOLUME on schema main.default") != std::string::npos);
  CHECK(!t.ws->volume_access().acl().find("main/default/air_checkpoints"));
  // Only the schema's owner (or an admin) grants on it.
  CHECK(t.grant(t.bob, "schema", "main.default", "bob", "CREATE_VOLUME")->status == 403);
  REQUIRE(t.grant(t.admin, "schema", "main.default", "alice", "CREATE_VOLUME")->status == 200);
  REQUIRE(t.submit(t.alice, "env_variables:\n  OUT: /Volumes/main/default/air_checkpoints\n")->status == 201);
  CHECK(t.ws->volume_access().acl().find("main/default/air_checkpoints")->owner == "alice");
  // Granted CREATE_VOLUME too, bob still cannot take her volume: the name is taken, its owner not named.
  REQUIRE(t.grant(t.admin, "schema", "main.default", "bob", "CREATE_VOLUME")->status == 200);
  auto taken = t.send(t.bob, "PUT", ckpt, "mine", "application/octet-stream");
  CHECK(taken->status == 409);
  CHECK(message(taken) == "volume main.default.air_checkpoints already exists and is not bob's: choose another name");

  // A schema of one's own: main.bob becomes bob's with his first volume there; alice may not use it.
  REQUIRE(t.send(t.bob, "PUT", "/api/2.0/fs/directories/Volumes/main/bob/out")->status == 204);
  CHECK(t.ws->volume_access().acl().find_container("main/bob")->owner == "bob");
  auto in_his = t.send(t.alice, "PUT", "/api/2.0/fs/directories/Volumes/main/bob/hers");
  CHECK(in_his->status == 403);
  CHECK(message(in_his) == "user 'alice' may not create volume main.bob.hers: schema main.bob does not exist or alice "
                           "lacks USE_SCHEMA on it; its owner can grant it: air volumes grant main.bob alice USE_SCHEMA");
  // Catalogs: only admins make them.
  auto newcat = t.send(t.alice, "PUT", "/api/2.0/fs/directories/Volumes/team/s/v");
  CHECK(newcat->status == 403);
  CHECK(message(newcat).find("catalog 'team' does not exist or alice lacks USE_CATALOG on it") != std::string::npos);
  CHECK(t.send(t.alice, "POST", "/api/2.1/unity-catalog/catalogs", R"({"name": "team"})")->status == 403);
  REQUIRE(t.send(t.admin, "POST", "/api/2.1/unity-catalog/catalogs", R"({"name": "team"})")->status == 200);
  // A catalog grant holds in all its schemas.
  REQUIRE(t.grant(t.admin, "catalog", "team", "alice", "USE_CATALOG")->status == 200);
  REQUIRE(t.grant(t.admin, "catalog", "team", "alice", "CREATE_SCHEMA")->status == 200);
  CHECK(t.send(t.alice, "PUT", "/api/2.0/fs/directories/Volumes/team/s/v")->status == 204);
  // Schemas through Unity Catalog's own call: bob holds nothing on team.
  auto bobs_schema = t.send(t.bob, "POST", "/api/2.1/unity-catalog/schemas", R"({"catalog_name": "team", "name": "x"})");
  CHECK(bobs_schema->status == 403);
  CHECK(message(bobs_schema) == "user 'bob' may not create schema team.x: catalog 'team' does not exist or bob lacks "
                                "USE_CATALOG on it; a workspace admin can create it (air fs mkdir "
                                "dbfs:/Volumes/team/x/<volume>) or grant it: air volumes grant team bob USE_CATALOG");
  CHECK(t.send(t.alice, "POST", "/api/2.1/unity-catalog/schemas", R"({"catalog_name": "team", "name": "x"})")->status ==
        200);
  CHECK(t.ws->volume_access().acl().find_container("team/x")->owner == "alice");
  auto bad = t.grant(t.admin, "schema", "team.s", "bob", "READ_VOLUME");
  CHECK(bad->status == 400);
  CHECK(message(bad) == "changes[0].add: 'READ_VOLUME' is not a schema privilege; use USE_SCHEMA or CREATE_VOLUME");
}

TEST_CASE("tenant: what a caller may not view answers as if it did not exist, naming no owner") {
  Pair t;
  REQUIRE(t.grant(t.admin, "schema", "main.default", "alice", "CREATE_VOLUME")->status == 200);
  REQUIRE(t.send(t.alice, "PUT", "/api/2.0/fs/files/Volumes/main/default/v/a.txt", "x", "application/octet-stream")
              ->status == 204);
  auto run = t.submit(t.alice, "");
  REQUIRE(run->status == 201);
  std::string id = json::parse(run->body)["run_id"];
  struct Probe {
    std::string hers, none;
  };
  for (const auto& p : std::vector<Probe>{
           {"/api/air/v1/runs/" + id, "/api/air/v1/runs/00000000"},
           {"/api/air/v1/runs/" + id + "/attempts/1/nodes/0/logs", "/api/air/v1/runs/00000000/attempts/1/nodes/0/logs"},
           {"/api/2.0/fs/files/Volumes/main/default/v/a.txt", "/api/2.0/fs/files/Volumes/main/default/w/a.txt"},
           {"/api/2.0/fs/directories/Volumes/main/default/v", "/api/2.0/fs/directories/Volumes/main/default/w"},
           {"/api/2.1/unity-catalog/volumes/main.default.v", "/api/2.1/unity-catalog/volumes/main.default.w"},
           {"/api/2.1/unity-catalog/permissions/volume/main.default.v",
            "/api/2.1/unity-catalog/permissions/volume/main.default.w"}}) {
    auto hers = t.send(t.bob, "GET", p.hers), none = t.send(t.bob, "GET", p.none);
    INFO(p.hers << " -> " << hers->status << " " << hers->body);
    CHECK(hers->status == 404);
    CHECK(none->status == 404);
    CHECK(hers->body.find("alice") == std::string::npos);
    // The same words but for the name itself.
    std::string a = hers->body, b = none->body;
    const std::vector<std::pair<std::string, std::string>> renames = {
        {id, "00000000"}, {"default/v", "default/w"}, {"default.v", "default.w"}};
    for (const auto& [from, to] : renames)
      for (size_t at; (at = a.find(from)) != std::string::npos;) a.replace(at, from.size(), to);
    CHECK(a == b);
  }
  CHECK(t.send(t.bob, "POST", "/api/air/v1/runs/" + id + "/cancel")->status == 404);
  auto listed = json::parse(t.as(t.bob).Get("/api/2.1/unity-catalog/volumes")->body);
  CHECK(listed["volumes"].empty());
}

TEST_CASE("tenant: the audit log names the caller and the object the handler used, refusals and reads included") {
  Pair t;
  for (const auto& [tok, scope] : {std::pair{t.alice, "alices"}, std::pair{t.bob, "bobs"}}) {
    REQUIRE(t.send(tok, "POST", "/api/2.0/secrets/scopes/create", json{{"scope", scope}}.dump())->status == 200);
    REQUIRE(t.send(tok, "POST", "/api/2.0/secrets/put",
                   json{{"scope", scope}, {"key", "k"}, {"string_value", "v"}}.dump())->status == 200);
  }
  // Bob reads his own secret with alice's scope in the query: the handler reads the body's scope, and so
  // does the log.
  auto own = t.send(t.bob, "GET", "/api/2.0/secrets/get?scope=alices&key=k", json{{"scope", "bobs"}, {"key", "k"}}.dump());
  CHECK(own->status == 200);
  // The other way round: his scope in the query, hers in the body: refused, and logged as hers.
  auto hers = t.send(t.bob, "GET", "/api/2.0/secrets/get?scope=bobs&key=k", json{{"scope", "alices"}, {"key", "k"}}.dump());
  CHECK(hers->status == 403);
  auto gets = t.audit("/api/2.0/secrets/get");
  REQUIRE(gets.size() == 2);
  CHECK(gets[0]["user"] == "bob");
  CHECK(gets[0]["object"] == "bobs/k");
  CHECK(gets[0]["status"] == 200);
  CHECK(gets[1]["user"] == "bob");
  CHECK(gets[1]["object"] == "alices/k");
  CHECK(gets[1]["status"] == 403);
  // An ACL change is logged with the principal the handler changed.
  REQUIRE(t.send(t.bob, "POST", "/api/2.0/secrets/acls/put?principal=alice",
                 json{{"scope", "bobs"}, {"principal", "users"}, {"permission", "READ"}}.dump())->status == 200);
  auto acl = t.audit("/api/2.0/secrets/acls/put");
  REQUIRE(acl.size() == 1);
  CHECK(acl[0]["object"] == "bobs principal=users");
  // Refused reads are logged, as the caller's.
  auto run = t.submit(t.alice, "");
  std::string id = json::parse(run->body)["run_id"];
  CHECK(t.send(t.bob, "GET", "/api/air/v1/runs/" + id)->status == 404);
  auto reads = t.audit("/api/air/v1/runs/" + id);
  REQUIRE(reads.size() == 1);
  CHECK(reads[0]["user"] == "bob");
  CHECK(reads[0]["status"] == 404);
  // Every entry names someone: no token, a bad token.
  CHECK(t.send("", "GET", "/api/air/v1/runs")->status == 401);
  CHECK(t.send("dapi-not-a-token", "GET", "/api/air/v1/runs")->status == 401);
  auto anon = t.audit("/api/air/v1/runs", "GET");
  REQUIRE(anon.size() == 2);
  CHECK(anon[0]["user"] == "(no token)");
  CHECK(anon[1]["user"] == "(invalid token)");
  // A request that revokes its own token is still logged as its sender's.
  auto [tok, info] = t.ws->auth().create_token("bob", 0, "self");
  REQUIRE(t.send(tok, "POST", "/api/2.0/token/delete", json{{"token_id", info.token_id}}.dump())->status == 200);
  auto del = t.audit("/api/2.0/token/delete");
  REQUIRE(del.size() == 1);
  CHECK(del[0]["user"] == "bob");
  CHECK(del[0]["object"] == "token_id=" + info.token_id);
  json log = json::parse(t.as(t.admin).Get("/api/air/v1/audit")->body);
  for (const auto& e : log["entries"]) CHECK(!e["user"].get<std::string>().empty());
}

TEST_CASE("tenant: one bootstrap admin token, replaced at start, listed and revocable") {
  Pair t;
  std::string first = t.admin;
  auto listed = [&](const std::string& tok) {
    std::vector<json> out;
    auto r = t.as(tok).Get("/api/2.0/token-management/tokens");
    INFO(r->status << " " << r->body);
    CHECK(r->status == 200);
    json body = json::parse(r->body);  // named: a range over a temporary's member would dangle
    for (const auto& x : body["token_infos"])
      if (x["comment"] == kBootstrapTokenComment) out.push_back(x);
    return out;
  };
  auto one = listed(first);
  REQUIRE(one.size() == 1);
  CHECK(one[0]["created_by_username"] == t.ws->auth().identity().bootstrap_admin());
  // A restart replaces it: the old one opens nothing, the new one is the only one listed.
  t.close();
  t.open();
  CHECK(t.as(first).Get("/api/2.0/preview/scim/v2/Me")->status == 401);
  auto now = listed(t.admin);
  REQUIRE(now.size() == 1);
  CHECK(now[0]["token_id"] != one[0]["token_id"]);
  // Revoked like any token (by another admin here: a user made admin).
  t.ws->auth().identity().add_member(kAdminsGroup, "alice");
  auto del = t.send(t.alice, "DELETE", "/api/2.0/token-management/tokens/" + now[0]["token_id"].get<std::string>());
  CHECK(del->status == 200);
  CHECK(t.as(t.admin).Get("/api/2.0/preview/scim/v2/Me")->status == 401);
  // Nothing a request can read holds it: not the database in clear.
  std::ifstream db(t.home + "/workspace.db", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(db)), {});
  CHECK(bytes.find(t.admin) == std::string::npos);
}

TEST_CASE("tenant: the CLI's client shows the server's own words for a refusal, and only a 401 hints at the token") {
  Pair t;
  REQUIRE(t.grant(t.admin, "schema", "main.default", "alice", "CREATE_VOLUME")->status == 200);
  REQUIRE(t.send(t.alice, "PUT", "/api/2.0/fs/directories/Volumes/main/default/v")->status == 204);
  REQUIRE(t.grant(t.alice, "volume", "main.default.v", "bob", "WRITE_VOLUME")->status == 200);
  std::string base = "http://127.0.0.1:" + std::to_string(t.port);
  air::Client bob(base, t.bob);
  // A run naming a volume bob may not create: the server's message, no token hint.
  try {
    bob.post_json("/api/air/v1/runs", json{{"workload_yaml", "experiment_name: t\ncompute:\n  accelerator_type: CPU_1xHOST\n"
                                                             "  num_accelerators: 1\ncommand: ls /Volumes/main/default/w\n"},
                                           {"file_name", "t.yaml"}});
    FAIL("bob's run was accepted");
  } catch (const air::ApiError& e) {
    CHECK(e.http_status() == 403);
    CHECK(std::string(e.what()).find("lacks CREATE_VOLUME on schema main.default") != std::string::npos);
    CHECK(e.hint().empty());
  }
  // A HEAD refused with 403 (WRITE_VOLUME without READ_VOLUME: the volume is visible to him) has no body:
  // still no token hint.
  try {
    bob.head("/api/2.0/fs/directories/Volumes/main/default/v");
    FAIL("bob's HEAD was answered");
  } catch (const air::ApiError& e) {
    CHECK(e.http_status() == 403);
    CHECK(e.hint().empty());
  }
  // A snapshot nobody uploaded is simply missing, for a user too (air run then uploads it).
  CHECK_FALSE(bob.head("/api/air/v1/snapshots/" + air::sha256_hex("nothing")));
  air::Client stranger(base, "dapi-unknown");
  try {
    stranger.get_json("/api/air/v1/runs");
    FAIL("an unknown token was answered");
  } catch (const air::ApiError& e) {
    CHECK(e.http_status() == 401);
    CHECK(e.hint().find("AIR_TOKEN") != std::string::npos);
  }
}
