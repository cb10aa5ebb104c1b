// Volume owners and grants through every door: the Files API, Unity Catalog's volumes and permissions
// routes, the submit check and the node spec's mounts, and the audit log. A real workspace (SQLite file,
// the server core on loopback, every route installed); only the backend records instead of starting agents.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/api/router.h"
#include "server/http/server.h"
#include "server/workspace/workspace.h"
#include "tests/server/recording_backend.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace air::server;

namespace {

struct Team {
  std::string home;
  std::vector<NodeLaunch> started;
  std::unique_ptr<Workspace> ws;
  http::Server srv;
  std::thread thread;
  int port = 0;
  std::string admin, alice, bob;
  bool own_home = false;

  explicit Team(std::string dir = {}) : home(std::move(dir)) {
    if (home.empty()) {
      own_home = true;
      char t[] = "/tmp/air-volume-grants-XXXXXX";
      home = ::mkdtemp(t);
    }
    WorkspaceOptions o;
    o.home = home;
    o.ticker = false;
    ws = std::make_unique<Workspace>(o, std::make_unique<RecordingBackend>(started));
    ws->set_url("http://127.0.0.1:1");
    ws->start();
    admin = ws->auth().create_admin_token();
    for (const char* u : {"alice", "bob"})
      if (!ws->auth().identity().user(u)) ws->auth().identity().add_user(u, "", 0);
    alice = ws->auth().create_token("alice", 0, "").first;
    bob = ws->auth().create_token("bob", 0, "").first;
    install_routes(srv, *ws);
    port = srv.bind("127.0.0.1", 0);
    REQUIRE(port > 0);
    thread = std::thread([this] { srv.listen(); });
  }
  ~Team() {
    srv.stop();
    thread.join();
    ws.reset();
    if (own_home) fs::remove_all(home);
  }

  httplib::Client as(const std::string& tok) {
    httplib::Client c("127.0.0.1", port);
    c.set_bearer_token_auth(tok);
    return c;
  }
  // PATCH one change; returns the reply.
  httplib::Result grant(const std::string& tok, const std::string& who, const std::string& add, const std::string& remove = "") {
    json change{{"principal", who}, {"add", json::array()}, {"remove", json::array()}};
    if (!add.empty()) change["add"].push_back(add);
    if (!remove.empty()) change["remove"].push_back(remove);
    return as(tok).Patch("/api/2.1/unity-catalog/permissions/volume/main.team.data", json{{"changes", {change}}}.dump(),
                         "application/json");
  }
  httplib::Result submit(const std::string& tok, const std::string& command) {
    std::string yaml = "experiment_name: t\ncompute:\n  accelerator_type: CPU_1xHOST\n  num_accelerators: 1\ncommand: " +
                       command + "\n";
    return as(tok).Post("/api/air/v1/runs", json{{"workload_yaml", yaml}, {"file_name", "t.yaml"}}.dump(),
                        "application/json");
  }
};

std::string message(const httplib::Result& r) {
  json j = json::parse(r->body);
  return j.contains("message") ? j["message"].get<std::string>() : j["error"]["message"].get<std::string>();
}

const char* kFile = "/api/2.0/fs/files/Volumes/main/team/data/a.txt";

}  // namespace

TEST_CASE("volume grants: a second user can neither read nor change a volume until its owner grants it") {
  Team t;
  REQUIRE(t.as(t.alice).Put(kFile, "alice's", "application/octet-stream")->status == 204);
  auto bob = t.as(t.bob);

  // To bob, holding nothing on it, the volume does not exist (issue 40): reads find nothing, writes are
  // refused as making it would be (schema main.team is alice's, made with her volume); no owner is named.
  auto read = bob.Get(kFile);
  CHECK(read->status == 404);
  CHECK(message(read) == "/Volumes/main/team/data/a.txt does not exist");
  CHECK(bob.Get("/api/2.0/fs/directories/Volumes/main/team/data")->status == 404);
  auto write = bob.Put("/api/2.0/fs/files/Volumes/main/team/data/b.txt", "x", "application/octet-stream");
  CHECK(write->status == 403);
  CHECK(message(write) == "user 'bob' may not create volume main.team.data: schema main.team does not exist or bob "
                          "lacks USE_SCHEMA on it; its owner can grant it: air volumes grant main.team bob USE_SCHEMA");
  CHECK(bob.Delete(kFile)->status == 403);
  CHECK(bob.Put("/api/2.0/fs/directories/Volumes/main/team/data/d")->status == 403);
  // Listings above the volumes show only what leads to a volume bob may read.
  CHECK(json::parse(bob.Get("/api/2.0/fs/directories/Volumes")->body)["contents"].empty());
  CHECK(json::parse(bob.Get("/api/2.1/unity-catalog/volumes")->body)["volumes"].empty());
  auto alices = json::parse(t.as(t.alice).Get("/api/2.1/unity-catalog/volumes")->body)["volumes"];
  REQUIRE(alices.size() == 1);
  CHECK(alices[0]["full_name"] == "main.team.data");
  CHECK(alices[0]["owner"] == "alice");
  // Only the owner (or an admin) changes grants.
  auto self_grant = t.grant(t.bob, "bob", "READ_VOLUME");
  CHECK(self_grant->status == 404);
  CHECK(message(self_grant) == "volume main.team.data does not exist; create it: air fs mkdir dbfs:/Volumes/main/team/data");

  auto granted = t.grant(t.alice, "bob", "READ_VOLUME");
  REQUIRE(granted->status == 200);
  CHECK(json::parse(granted->body) ==
        json{{"privilege_assignments", {{{"principal", "bob"}, {"privileges", {"READ_VOLUME"}}}}}});
  CHECK(bob.Get(kFile)->body == "alice's");
  CHECK(json::parse(bob.Get("/api/2.0/fs/directories/Volumes")->body)["contents"][0]["name"] == "main");
  CHECK(json::parse(bob.Get("/api/2.1/unity-catalog/volumes")->body)["volumes"].size() == 1);
  auto still = bob.Put("/api/2.0/fs/files/Volumes/main/team/data/b.txt", "x", "application/octet-stream");
  CHECK(still->status == 403);
  CHECK(message(still) == "user 'bob' lacks WRITE_VOLUME on volume main.team.data (owner: alice) (has READ_VOLUME); "
                          "the owner can grant it: air volumes grant main.team.data bob WRITE_VOLUME");

  // A group grant counts for its members; a revoke takes it back.
  REQUIRE(t.grant(t.alice, "users", "WRITE_VOLUME")->status == 200);
  CHECK(bob.Put("/api/2.0/fs/files/Volumes/main/team/data/b.txt", "x", "application/octet-stream")->status == 204);
  REQUIRE(t.grant(t.alice, "users", "", "WRITE_VOLUME")->status == 200);
  CHECK(bob.Delete("/api/2.0/fs/files/Volumes/main/team/data/b.txt")->status == 403);

  // Every grant change is in the audit log, with who, the volume and the change.
  json log = json::parse(t.as(t.admin).Get("/api/air/v1/audit")->body);
  std::vector<std::string> changes;
  for (const auto& e : log["entries"])
    if (e["method"] == "PATCH")
      changes.push_back(e["user"].get<std::string>() + " " + e["route"].get<std::string>() + " " +
                        e["object"].get<std::string>() + " " + std::to_string(e["status"].get<int>()));
  CHECK(changes == std::vector<std::string>{
                       "bob /api/2.1/unity-catalog/permissions/volume/main.team.data bob +READ_VOLUME 404",
                       "alice /api/2.1/unity-catalog/permissions/volume/main.team.data bob +READ_VOLUME 200",
                       "alice /api/2.1/unity-catalog/permissions/volume/main.team.data users +WRITE_VOLUME 200",
                       "alice /api/2.1/unity-catalog/permissions/volume/main.team.data users -WRITE_VOLUME 200"});
}

TEST_CASE("volume grants: bad changes are refused with what is wrong and change nothing") {
  Team t;
  REQUIRE(t.as(t.alice).Put(kFile, "x", "application/octet-stream")->status == 204);
  auto bad = t.grant(t.alice, "bob", "READ");
  CHECK(bad->status == 400);
  CHECK(message(bad) == "changes[0].add: 'READ' is not a volume privilege; use READ_VOLUME or WRITE_VOLUME");
  auto nobody = t.grant(t.alice, "zed", "READ_VOLUME");
  CHECK(nobody->status == 404);
  CHECK(message(nobody).find("no user or group named 'zed'") != std::string::npos);
  auto missing = t.as(t.alice).Get("/api/2.1/unity-catalog/permissions/volume/main.team.nope");
  CHECK(missing->status == 404);
  CHECK(message(missing) == "volume main.team.nope does not exist; create it: air fs mkdir dbfs:/Volumes/main/team/nope");
  CHECK(t.as(t.alice).Get("/api/2.1/unity-catalog/permissions/volume/main.team")->status == 400);
  CHECK(json::parse(t.as(t.alice).Get("/api/2.1/unity-catalog/permissions/volume/main.team.data")->body) ==
        json{{"privilege_assignments", json::array()}});
}

TEST_CASE("volume grants: a run may name only volumes its owner may read, and mounts read-only what it may not write") {
  Team t;
  REQUIRE(t.as(t.alice).Put(kFile, "x", "application/octet-stream")->status == 204);
  auto refused = t.submit(t.bob, "cat /Volumes/main/team/data/a.txt");
  CHECK(refused->status == 403);
  CHECK(message(refused) ==
        "the workload names /Volumes/main/team/data, which does not exist and its owner may not create: user 'bob' may "
        "not create volume main.team.data: schema main.team does not exist or bob lacks USE_SCHEMA on it; its owner "
        "can grant it: air volumes grant main.team bob USE_SCHEMA");
  CHECK(t.started.empty());

  REQUIRE(t.grant(t.alice, "bob", "READ_VOLUME")->status == 200);
  auto ok = t.submit(t.bob, "cat /Volumes/main/team/data/a.txt > /Volumes/main/bob/out/copy");
  REQUIRE(ok->status == 201);
  std::string run = json::parse(ok->body)["run_id"];
  auto spec = t.ws->lifecycle().node_spec(run, 1, 0);
  CHECK(spec.volumes == std::vector<std::string>{"main/team/data", "main/bob/out"});
  CHECK(spec.read_only_volumes == std::vector<std::string>{"main/team/data"});
  // The volume the run named first became bob's.
  CHECK(t.ws->volume_access().volume_record("main/bob/out")->owner == "bob");
  // Bob's node token reads alice's volume, writes only his own.
  REQUIRE(!t.started.empty());
  auto node = t.as(t.started.back().token);
  CHECK(node.Get(kFile)->status == 200);
  auto nw = node.Put("/api/2.0/fs/files/Volumes/main/team/data/n.txt", "x", "application/octet-stream");
  CHECK(nw->status == 403);
  CHECK(message(nw).find("run " + run + "'s owner 'bob' lacks WRITE_VOLUME on volume main.team.data") != std::string::npos);
  CHECK(node.Put("/api/2.0/fs/files/Volumes/main/bob/out/copy", "x", "application/octet-stream")->status == 204);

  // A revoked grant: the next spec no longer mounts it, and the node token cannot read it.
  REQUIRE(t.grant(t.alice, "bob", "", "READ_VOLUME")->status == 200);
  spec = t.ws->lifecycle().node_spec(run, 1, 0);
  CHECK(spec.volumes == std::vector<std::string>{"main/bob/out"});
  auto gone = node.Get(kFile);
  CHECK(gone->status == 404);
  CHECK(message(gone) == "/Volumes/main/team/data does not exist");
}

TEST_CASE("volume grants: volumes from before owners existed become the bootstrap admin's") {
  char tmp[] = "/tmp/air-volume-migrate-XXXXXX";
  std::string home = ::mkdtemp(tmp);
  fs::create_directories(home + "/volumes/main/old/ckpt/run1");
  std::ofstream(home + "/volumes/main/old/ckpt/run1/w.bin") << "weights";
  {
    Team t(home);
    std::string boot = t.ws->auth().identity().bootstrap_admin();
    CHECK(t.ws->volume_access().acl().find("main/old/ckpt")->owner == boot);
    CHECK(t.as(t.bob).Get("/api/2.0/fs/files/Volumes/main/old/ckpt/run1/w.bin")->status == 404);
    CHECK(t.ws->volume_access().acl().find_container("main/old")->owner == boot);
    CHECK(t.as(t.admin).Get("/api/2.0/fs/files/Volumes/main/old/ckpt/run1/w.bin")->body == "weights");
  }
  fs::remove_all(home);
}
