// The workspace's secrets and MLflow services as the workspace wires them: who may call what with which
// token, an MLflow run per attempt with its latest metrics in the run record, and no value in the database.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "core/base/codec.h"
#include "server/workspace/services.h"
#include "server/api/services.h"
#include "server/workspace/workspace.h"
#include "tests/server/secret_test_util.h"

using namespace air::server;

namespace {

class NoBackend : public Backend {
 public:
  int total_gpus() const override { return 0; }
  int start_node(const NodeLaunch&) override { return 4242; }
  bool agent_alive(int) override { return true; }
  void kill_node(int) override {}
};

struct Fixture {
  air::test::TempDir dir;
  std::unique_ptr<Workspace> ws;
  Fixture() {
    WorkspaceOptions o;
    o.home = dir.path().string();
    o.ticker = false;
    ws = std::make_unique<Workspace>(o, std::make_unique<NoBackend>());
    ws->set_url("http://127.0.0.1:1");
    ws->start();
  }
  ApiReply call(const std::optional<Principal>& who, const std::string& method, const std::string& target,
                const std::string& body = {}, const std::vector<SecretRef>& refs = {}) {
    return handle_services_request(ws->services(), who, refs, method, target, body);
  }
  std::string submit(const std::string& extra) {
    air::api::SubmitRequest req;
    req.workload_yaml = "experiment_name: my-exp\ncompute:\n  accelerator_type: CPU_1xHOST\n  num_accelerators: 1\n"
                        "command: echo hi\n" + extra;
    req.file_name = "t.yaml";
    return ws->runs().submit(req).run_id;
  }
};

const Principal kAdmin{true, "", 0};

}  // namespace

TEST_CASE("services: the admin token manages secrets, a node token reads only its run's references") {
  Fixture f;
  const std::string value = "hf_Value-Of/The+Token";
  REQUIRE(f.call(kAdmin, "POST", "/api/2.0/secrets/scopes/create", R"({"scope":"my_scope"})").status == 200);
  REQUIRE(f.call(kAdmin, "POST", "/api/2.0/secrets/put",
                 nlohmann::json{{"scope", "my_scope"}, {"key", "hf_token"}, {"string_value", value}}.dump())
              .status == 200);
  REQUIRE(f.call(kAdmin, "POST", "/api/2.0/secrets/put",
                 R"({"scope":"my_scope","key":"other","string_value":"another-value"})")
              .status == 200);
  std::string id = f.submit("secrets:\n  HF_TOKEN: my_scope/hf_token\n");
  Principal node{false, id, 1};
  node.owner = "admin";  // the run's owner, as authenticate() fills it in: the admin may read every scope
  node.owner_admin = true;
  std::vector<SecretRef> refs = {{"my_scope", "hf_token"}};

  ApiReply got = f.call(node, "GET", "/api/2.0/secrets/get?scope=my_scope&key=hf_token", {}, refs);
  REQUIRE(got.status == 200);
  CHECK(air::base64_decode(got.body["value"].get<std::string>()) == value);

  ApiReply other = f.call(node, "GET", "/api/2.0/secrets/get?scope=my_scope&key=other", {}, refs);
  CHECK(other.status == 403);
  CHECK(other.body["error_code"] == "PERMISSION_DENIED");
  CHECK(f.call(node, "GET", "/api/2.0/secrets/list?scope=my_scope", {}, refs).status == 403);
  CHECK(f.call(node, "POST", "/api/2.0/secrets/put", R"({"scope":"my_scope","key":"x","string_value":"abcd"})", refs)
            .status == 403);
  CHECK(f.call(std::nullopt, "GET", "/api/2.0/secrets/get?scope=my_scope&key=hf_token").status == 401);
  CHECK(f.call(std::nullopt, "GET", "/api/2.0/mlflow/runs/get?run_id=x").status == 401);
  CHECK(f.call(kAdmin, "GET", "/api/2.0/nothing").status == 404);
}

TEST_CASE("services: each attempt gets an MLflow run in its experiment and get shows the latest metrics") {
  Fixture f;
  std::string id = f.submit("");
  auto run = f.ws->runs().get(id);
  REQUIRE(run.attempts.size() == 1);
  std::string mlflow_id = run.attempts[0].mlflow_run_id;
  REQUIRE_FALSE(mlflow_id.empty());
  CHECK(f.ws->lifecycle().node_spec(id, 1, 0).mlflow_run_id == mlflow_id);

  // A node token logs through the MLflow API, as the command would with MLFLOW_TRACKING_TOKEN.
  Principal node{false, id, 1};
  nlohmann::json batch = {{"run_id", mlflow_id},
                          {"metrics", {{{"key", "loss"}, {"value", 2.5}, {"timestamp", 10}, {"step", 0}},
                                       {{"key", "loss"}, {"value", 1.25}, {"timestamp", 20}, {"step", 1}}}}};
  REQUIRE(f.call(node, "POST", "/api/2.0/mlflow/runs/log-batch", batch.dump()).status == 200);
  // Another run's node token may not log to (or read) this run's MLflow run.
  std::string other = f.submit("");
  Principal stranger{false, other, 1};
  auto denied = f.call(stranger, "POST", "/api/2.0/mlflow/runs/log-batch", batch.dump());
  CHECK(denied.status == 403);
  CHECK(denied.body["error_code"] == "PERMISSION_DENIED");
  CHECK(f.call(stranger, "GET", "/api/2.0/mlflow/runs/get?run_id=" + mlflow_id).status == 403);
  auto exp = f.call(kAdmin, "GET", "/api/2.0/mlflow/experiments/get-by-name?experiment_name=my-exp");
  REQUIRE(exp.status == 200);
  auto mrun = f.call(kAdmin, "GET", "/api/2.0/mlflow/runs/get?run_id=" + mlflow_id);
  CHECK(mrun.body["run"]["info"]["experiment_id"] == exp.body["experiment"]["experiment_id"]);

  run = f.ws->runs().get(id);
  REQUIRE(run.attempts[0].metrics.size() == 1);
  CHECK(run.attempts[0].metrics[0].key == "loss");
  CHECK(run.attempts[0].metrics[0].value == 1.25);
  CHECK(run.attempts[0].metrics[0].step == 1);
  // The list view stays light.
  CHECK(f.ws->runs().list(0, true).runs[0].attempts[0].metrics.empty());

  // A restarted workspace still knows the attempt's MLflow run.
  f.ws.reset();
  WorkspaceOptions o;
  o.home = f.dir.path().string();
  o.ticker = false;
  f.ws = std::make_unique<Workspace>(o, std::make_unique<NoBackend>());
  f.ws->start();
  CHECK(f.ws->lifecycle().node_spec(id, 1, 0).mlflow_run_id == mlflow_id);
  CHECK(f.ws->runs().get(id).attempts[0].metrics.size() == 1);
}

TEST_CASE("services: a value put through the API is not in the database files or the spec") {
  Fixture f;
  const std::string value = "grep-me-if-you-can-7f3a9";
  f.call(kAdmin, "POST", "/api/2.0/secrets/scopes/create", R"({"scope":"s"})");
  REQUIRE(f.call(kAdmin, "POST", "/api/2.0/secrets/put",
                 nlohmann::json{{"scope", "s"}, {"key", "k"}, {"string_value", value}}.dump())
              .status == 200);
  std::string id = f.submit("secrets:\n  TOKEN: s/k\n");
  CHECK(nlohmann::json(f.ws->lifecycle().node_spec(id, 1, 0)).dump().find(value) == std::string::npos);
  CHECK(nlohmann::json(f.ws->runs().get(id)).dump().find(value) == std::string::npos);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(f.dir.path())) {
    if (e.path().filename().string().rfind("workspace.db", 0) != 0) continue;
    ++files;
    std::string bytes = air::test::read_file(e.path().string());
    CHECK(bytes.find(value) == std::string::npos);
    CHECK(bytes.find(air::base64_encode(value)) == std::string::npos);
  }
  CHECK(files >= 1);
}

// Issue 22, finding 5: the check read the query's run_id while the handler used the body's, and a body with
// run_id "" and run_uuid set skipped the check. One function now names the run for both.
TEST_CASE("services: a node token cannot reach another run's MLflow run through the query or run_uuid") {
  Fixture f;
  std::string mine = f.submit(""), theirs = f.submit("");
  std::string my_mlflow = f.ws->runs().get(mine).attempts[0].mlflow_run_id;
  std::string their_mlflow = f.ws->runs().get(theirs).attempts[0].mlflow_run_id;
  Principal node{false, mine, 1};
  nlohmann::json metric = {{"key", "loss"}, {"value", 9.0}, {"timestamp", 1}, {"step", 0}};
  nlohmann::json body = {{"run_id", their_mlflow}, {"metrics", {metric}}};
  auto via_query = f.call(node, "POST", "/api/2.0/mlflow/runs/log-batch?run_id=" + my_mlflow, body.dump());
  CHECK(via_query.status == 403);
  nlohmann::json uuid = {{"run_id", ""}, {"run_uuid", their_mlflow}, {"metrics", {metric}}};
  CHECK(f.call(node, "POST", "/api/2.0/mlflow/runs/log-batch", uuid.dump()).status == 403);
  CHECK(f.ws->runs().get(theirs).attempts[0].metrics.empty());
  CHECK(air::server::mlflow_run_named("/api/2.0/mlflow/runs/get?run_id=a", R"({"run_id": "b"})") == "b");
  CHECK(air::server::mlflow_run_named("/x?run_uuid=c", R"({"run_id": ""})") == "c");
  // Its own run still works, named either way.
  nlohmann::json own = {{"run_id", ""}, {"run_uuid", my_mlflow}, {"metrics", {metric}}};
  CHECK(f.call(node, "POST", "/api/2.0/mlflow/runs/log-batch", own.dump()).status == 200);
}
