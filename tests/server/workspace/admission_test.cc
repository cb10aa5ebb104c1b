// Admission's steps at their own seam (server/workspace/admission.h), over a real identity store, blob store
// and volume store in a temporary folder; and the typed run spec's stored text (run_spec.h).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "server/workspace/admission.h"
#include "server/workspace/errors.h"

namespace fs = std::filesystem;
using namespace air::server;

namespace {

struct Home {
  std::string dir;
  Home() {
    char t[] = "/tmp/air-admission-test-XXXXXX";
    dir = ::mkdtemp(t);
  }
  ~Home() { fs::remove_all(dir); }
};

air::api::SubmitRequest request(const std::string& extra) {
  air::api::SubmitRequest req;
  req.workload_yaml = "experiment_name: t\ncompute:\n  accelerator_type: CPU_1xHOST\n  num_accelerators: 2\n"
                      "command: echo /Volumes/main/default/a\n" + extra;
  req.file_name = "t.yaml";
  return req;
}

// The HttpError a step throws: status, code and message.
template <class F>
HttpError refusal(F&& f) {
  try {
    f();
  } catch (const HttpError& e) {
    return e;
  }
  FAIL("the step did not refuse");
  return HttpError(0, "", "");
}

}  // namespace

TEST_CASE("admission: a node token may not submit, a user may") {
  Home h;
  IdentityStore ids(h.dir + "/workspace.db", "admin");
  Principal node;
  node.run_id = "r1";
  node.attempt = 1;
  auto e = refusal([&] { admission::check_submitter(node, {}, ids); });
  CHECK(e.status == 403);
  CHECK(std::string(e.what()) == "a node token may not submit runs");
  Principal admin;
  admin.user = "admin";
  admin.admin = true;
  CHECK_NOTHROW(admission::check_submitter(admin, {}, ids));
}

TEST_CASE("admission: the workload is parsed with every diagnostic, and permissions must name who exists") {
  Home h;
  IdentityStore ids(h.dir + "/workspace.db", "admin");
  auto bad = request("");
  bad.workload_yaml = "experiment_name: t\ncompute:\n  acelerator_type: CPU_1xHOST\ncommand: x\n";
  auto e = refusal([&] { admission::parse(bad); });
  CHECK(e.status == 400);
  CHECK(e.code == "INVALID_WORKLOAD");
  CHECK(std::string(e.what()) == "the workspace rejected t.yaml");
  CHECK_FALSE(e.diagnostics.empty());

  air::Workload w = admission::parse(request("permissions:\n  - user_name: ghost\n    level: CAN_VIEW\n"));
  auto p = refusal([&] { admission::resolve_permissions(w, ids); });
  CHECK(p.status == 400);
  CHECK(std::string(p.what()) == "permissions[0]: user 'ghost' does not exist in this workspace");
  ids.add_user("bob", "", 0);
  w = admission::parse(request("permissions:\n  - user_name: bob\n    level: CAN_VIEW\n  - group_name: users\n"
                               "    level: CAN_VIEW\n  - group_name: nope\n    level: CAN_VIEW\n"));
  auto g = refusal([&] { admission::resolve_permissions(w, ids); });
  CHECK(std::string(g.what()) == "permissions[2]: group 'nope' does not exist in this workspace");
  w = admission::parse(request("permissions:\n  - user_name: bob\n    level: CAN_VIEW\n"));
  auto grants = admission::resolve_permissions(w, ids);
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].user_name == "bob");
  CHECK(grants[0].permission_level == "CAN_VIEW");
}

TEST_CASE("admission: a snapshot must be uploaded and readable, and the pool must hold the run") {
  Home h;
  BlobStore blobs(h.dir + "/blobs");
  VolumeStore volumes(h.dir + "/volumes");
  air::Workload w = admission::parse(request(""));
  auto req = request("");
  CHECK(admission::check_snapshot(req, w, volumes, blobs, [] { return true; }).bytes == 0);  // none named
  req.snapshot_digest = std::string(64, 'a');
  auto missing = refusal([&] { admission::check_snapshot(req, w, volumes, blobs, [] { return true; }); });
  CHECK(missing.code == "SNAPSHOT_MISSING");
  CHECK(std::string(missing.what()) == "snapshot " + req.snapshot_digest + " has not been uploaded");

  air::Workload gpu = admission::parse(request(""));
  gpu.compute.gpu = true;
  gpu.compute.nodes = 2;
  gpu.compute.accelerators_per_node = 4;
  CHECK_NOTHROW(admission::check_fits_pool(gpu, "default", 8, false));
  CHECK_NOTHROW(admission::check_fits_pool(gpu, "big", std::nullopt, true));  // a batch backend's pool
  auto e = refusal([&] { admission::check_fits_pool(gpu, "small", 4, true); });
  CHECK(e.code == "INSUFFICIENT_RESOURCES");
  CHECK(std::string(e.what()).find("needs 8 GPUs on 2 node(s), but pool 'small' has 4") != std::string::npos);
}

TEST_CASE("admission: the typed run spec, and its stored text read back the same") {
  air::Workload w = admission::parse(request("env_variables:\n  OUT: /Volumes/main/default/b\n"
                                             "secrets:\n  HF_TOKEN: team/hf\nmlflow_run_name: first\n"));
  RunSpec s = admission::run_spec(w, {"/Volumes/main/default/code/x.tar.zst", 10});
  CHECK(s.node.command == "echo /Volumes/main/default/a");
  REQUIRE(s.node.env.size() == 1);
  CHECK(s.node.env[0] == std::pair<std::string, std::string>{"OUT", "/Volumes/main/default/b"});
  REQUIRE(s.node.secrets.size() == 1);
  CHECK(s.node.secrets[0].scope == "team");
  CHECK(s.node.snapshot_path == "/Volumes/main/default/code/x.tar.zst");
  CHECK(s.mlflow_run_name == "first");
  RunSpec back = RunSpec::parse(s.to_json());
  CHECK(back.to_json() == s.to_json());
  CHECK(back.named_volume_paths() == s.named_volume_paths());
  CHECK_FALSE(s.named_volume_paths().empty());
  // A row written before the spec was typed reads the same way (the keys are the stored ones).
  RunSpec old = RunSpec::parse(R"({"command":"c","env":[["K","v"]],"gpu":true,"local_world_size":4})");
  CHECK(old.node.command == "c");
  CHECK(old.node.gpu);
  CHECK(old.node.local_world_size == 4);
  CHECK(refusal([] { RunSpec::parse("not json"); }).status == 500);
}
