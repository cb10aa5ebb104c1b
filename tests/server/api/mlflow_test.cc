// The MLflow REST subset over a real SQLite file: documented request/response shapes and error codes, and
// the latest-value and history helpers the workspace uses.
#include <catch2/catch.hpp>

#include <cmath>

#include "server/api/mlflow.h"
#include "tests/server/secret_test_util.h"

using namespace air::server;
using nlohmann::json;

namespace {

struct Fixture {
  air::test::TempDir dir;
  MlflowStore store{dir / "air.db"};
  ApiReply post(const std::string& op, const json& body) {
    return handle_mlflow_request(store, "POST", "/api/2.0/mlflow/" + op, body.dump(), true);
  }
  ApiReply get(const std::string& op_and_query) {
    return handle_mlflow_request(store, "GET", "/api/2.0/mlflow/" + op_and_query, "", true);
  }
  std::string new_run(const std::string& exp_name = "exp") {
    auto e = get("experiments/get-by-name?experiment_name=" + exp_name);
    std::string id = e.status == 200 ? e.body["experiment"]["experiment_id"].get<std::string>()
                                     : post("experiments/create", {{"name", exp_name}}).body["experiment_id"].get<std::string>();
    return post("runs/create", {{"experiment_id", id}, {"start_time", 1000}}).body["run"]["info"]["run_id"];
  }
};

}  // namespace

TEST_CASE("mlflow API: experiments create and get-by-name") {
  Fixture f;
  auto r = f.get("experiments/get-by-name?experiment_name=air-multinode-llama-sft");
  CHECK(r.status == 404);
  CHECK(r.body == json::parse(R"({"error_code":"RESOURCE_DOES_NOT_EXIST",
      "message":"Could not find experiment with name 'air-multinode-llama-sft'"})"));
  r = f.post("experiments/create", {{"name", "air-multinode-llama-sft"}, {"tags", {{{"key", "team"}, {"value", "ml"}}}}});
  CHECK(r.status == 200);
  CHECK(r.body == json{{"experiment_id", "1"}});  // "0" is the Default experiment, as in MLflow
  r = f.get("experiments/get-by-name?experiment_name=air-multinode-llama-sft");
  CHECK(r.status == 200);
  auto e = r.body["experiment"];
  CHECK(e["experiment_id"] == "1");
  CHECK(e["name"] == "air-multinode-llama-sft");
  CHECK(e["lifecycle_stage"] == "active");
  CHECK(e["artifact_location"] == "mlflow-artifacts:/1");
  CHECK(e["tags"] == json::parse(R"([{"key":"team","value":"ml"}])"));
  r = f.post("experiments/create", {{"name", "air-multinode-llama-sft"}});
  CHECK(r.status == 400);
  CHECK(r.body["error_code"] == "RESOURCE_ALREADY_EXISTS");
  r = f.post("experiments/create", json::object());
  CHECK(r.body == json::parse(R"({"error_code":"INVALID_PARAMETER_VALUE","message":"Missing value for required parameter 'name'."})"));
  CHECK(f.store.get_or_create_experiment("air-multinode-llama-sft") == "1");
  CHECK(f.store.get_or_create_experiment("new-one") == "2");
}

TEST_CASE("mlflow API: runs create get and update") {
  Fixture f;
  f.post("experiments/create", {{"name", "exp"}});
  auto r = f.post("runs/create", {{"experiment_id", "1"}, {"run_name", "attempt-0"}, {"start_time", "1700000000000"},
                                  {"tags", {{{"key", "air.run_id"}, {"value", "r1"}}}}});
  REQUIRE(r.status == 200);
  auto info = r.body["run"]["info"];
  std::string id = info["run_id"];
  CHECK(id.size() == 32);
  CHECK(info["run_uuid"] == id);
  CHECK(info["experiment_id"] == "1");
  CHECK(info["run_name"] == "attempt-0");
  CHECK(info["status"] == "RUNNING");
  CHECK(info["start_time"] == 1700000000000);
  CHECK(info["lifecycle_stage"] == "active");
  CHECK_FALSE(info.contains("end_time"));
  CHECK(r.body["run"]["data"]["tags"] == json::parse(R"([{"key":"air.run_id","value":"r1"},{"key":"mlflow.runName","value":"attempt-0"}])"));
  r = f.get("runs/get?run_id=" + id);
  CHECK(r.body["run"]["info"]["run_id"] == id);
  r = f.post("runs/update", {{"run_id", id}, {"status", "FINISHED"}, {"end_time", 1700000009000}});
  CHECK(r.body["run_info"]["status"] == "FINISHED");
  CHECK(r.body["run_info"]["end_time"] == 1700000009000);
  r = f.post("runs/update", {{"run_uuid", id}, {"status", "DONE"}});
  CHECK(r.body["error_code"] == "INVALID_PARAMETER_VALUE");
  r = f.get("runs/get?run_id=nope");
  CHECK(r.status == 404);
  CHECK(r.body == json::parse(R"({"error_code":"RESOURCE_DOES_NOT_EXIST","message":"Run with id=nope not found"})"));
  r = f.post("runs/create", {{"experiment_id", "99"}});
  CHECK(r.status == 404);
  r = f.post("runs/create", json::object());  // the Default experiment
  CHECK(r.body["run"]["info"]["experiment_id"] == "0");
}

TEST_CASE("mlflow API: metrics params tags - latest values and history") {
  Fixture f;
  std::string id = f.new_run();
  CHECK(f.post("runs/log-metric", {{"run_id", id}, {"key", "train_loss"}, {"value", 2.5}, {"timestamp", 10}, {"step", 1}}).status == 200);
  CHECK(f.post("runs/log-metric", {{"run_id", id}, {"key", "train_loss"}, {"value", 1.5}, {"timestamp", "20"}, {"step", "2"}}).status == 200);
  auto r = f.post("runs/log-batch", {{"run_id", id},
                                     {"metrics", {{{"key", "lr"}, {"value", 0.001}, {"timestamp", 30}, {"step", 2}},
                                                  {{"key", "train_loss"}, {"value", 9.0}, {"timestamp", 99}, {"step", 0}},
                                                  {{"key", "grad_norm"}, {"value", "NaN"}, {"timestamp", 30}}}},
                                     {"params", {{{"key", "model_name"}, {"value", "llama"}}}},
                                     {"tags", {{{"key", "t"}, {"value", "v"}}}}});
  CHECK(r.status == 200);
  CHECK(f.post("runs/log-parameter", {{"run_id", id}, {"key", "lr"}, {"value", "0.001"}}).status == 200);
  CHECK(f.post("runs/log-parameter", {{"run_id", id}, {"key", "lr"}, {"value", "0.001"}}).status == 200);  // same value: ok
  r = f.post("runs/log-parameter", {{"run_id", id}, {"key", "lr"}, {"value", "0.002"}});
  CHECK(r.status == 400);
  CHECK(r.body["error_code"] == "INVALID_PARAMETER_VALUE");
  CHECK(r.body["message"].get<std::string>().rfind("Changing param values is not allowed.", 0) == 0);

  r = f.get("runs/get?run_id=" + id);
  auto data = r.body["run"]["data"];
  // Latest = highest step, then latest timestamp: the step-0 value logged last does not win.
  CHECK(data["metrics"] == json::parse(R"([{"key":"grad_norm","value":"NaN","timestamp":30,"step":0},
      {"key":"lr","value":0.001,"timestamp":30,"step":2},{"key":"train_loss","value":1.5,"timestamp":20,"step":2}])"));
  CHECK(data["params"] == json::parse(R"([{"key":"lr","value":"0.001"},{"key":"model_name","value":"llama"}])"));

  r = f.get("metrics/get-history?run_id=" + id + "&metric_key=train_loss");
  CHECK(r.body == json::parse(R"({"metrics":[{"key":"train_loss","value":9.0,"timestamp":99,"step":0},
      {"key":"train_loss","value":2.5,"timestamp":10,"step":1},{"key":"train_loss","value":1.5,"timestamp":20,"step":2}]})"));
  r = f.get("metrics/get-history?run_id=" + id + "&metric_key=train_loss&max_results=2");
  CHECK(r.body["metrics"].size() == 2);
  CHECK(r.body["next_page_token"] == "2");
  r = f.get("metrics/get-history?run_id=" + id + "&metric_key=train_loss&max_results=2&page_token=2");
  CHECK(r.body["metrics"].size() == 1);
  CHECK_FALSE(r.body.contains("next_page_token"));

  auto latest = f.store.latest_metrics(id);
  REQUIRE(latest.size() == 3);
  CHECK(std::isnan(latest[0].value));
  CHECK(latest[2].key == "train_loss");
  CHECK(latest[2].value == 1.5);
  auto all = f.store.all_metric_history(id);
  CHECK(all.size() == 3);
  CHECK(all["train_loss"].size() == 3);
}

TEST_CASE("mlflow API: bad input is INVALID_PARAMETER_VALUE - unknown runs RESOURCE_DOES_NOT_EXIST") {
  Fixture f;
  std::string id = f.new_run();
  auto r = f.post("runs/log-metric", {{"run_id", id}, {"key", "loss"}, {"value", 1.0}});
  CHECK(r.body == json::parse(R"({"error_code":"INVALID_PARAMETER_VALUE","message":"Missing value for required parameter 'timestamp'."})"));
  r = f.post("runs/log-metric", {{"run_id", id}, {"key", "bad:key"}, {"value", 1.0}, {"timestamp", 1}});
  CHECK(r.body["error_code"] == "INVALID_PARAMETER_VALUE");
  r = f.post("runs/log-metric", {{"run_id", id}, {"key", "loss"}, {"value", "abc"}, {"timestamp", 1}});
  CHECK(r.body["error_code"] == "INVALID_PARAMETER_VALUE");
  r = f.post("runs/log-metric", {{"run_id", "missing"}, {"key", "loss"}, {"value", 1.0}, {"timestamp", 1}});
  CHECK(r.status == 404);
  CHECK(r.body["error_code"] == "RESOURCE_DOES_NOT_EXIST");
  json many = json::array();
  for (int i = 0; i < 1001; ++i) many.push_back({{"key", "m"}, {"value", i}, {"timestamp", i}});
  r = f.post("runs/log-batch", {{"run_id", id}, {"metrics", many}});
  CHECK(r.body["error_code"] == "INVALID_PARAMETER_VALUE");
  CHECK(f.store.metric_history(id, "m").empty());  // nothing of a rejected batch was kept
  r = handle_mlflow_request(f.store, "POST", "/api/2.0/mlflow/runs/log-metric", "{not json", true);
  CHECK(r.body["error_code"] == "MALFORMED_REQUEST");
  CHECK(f.get("runs/log-metric").status == 405);
  CHECK(f.get("runs/search").status == 404);
  r = handle_mlflow_request(f.store, "GET", "/api/2.0/mlflow/runs/get?run_id=" + id, "", false);
  CHECK(r.status == 401);
}
