// The MLflow client against a real loopback HTTP server routing to handle_mlflow_request.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "core/client/mlflow.h"
#include "server/api/mlflow.h"
#include "tests/server/secret_test_server.h"
#include "tests/server/secret_test_util.h"

using namespace air::server;

TEST_CASE("mlflow client: create experiment and run log metrics read them back") {
  air::test::TempDir dir;
  MlflowStore store(dir / "air.db");
  air::test::LoopbackServer server{[&](const std::string& m, const std::string& p, const std::string& b,
                                       const std::string& token) {
    return handle_mlflow_request(store, m, p, b, token == "tracking-token");
  }};
  air::MlflowClient c(server.url(), "tracking-token");
  std::string exp = c.get_or_create_experiment("air-multinode-llama-sft");
  CHECK(c.get_or_create_experiment("air-multinode-llama-sft") == exp);
  std::string run = c.create_run(exp, "attempt-0", {{"air.attempt", "0"}});
  c.log_param(run, "model_name", "tiny");
  for (int step = 1; step <= 30; ++step) c.log_metric(run, "train_loss", 10.0 / step, step);
  c.log_batch(run, {{"lr", 0.001, 0, 30}, {"tokens_per_s", INFINITY, 0, 30}}, {{"world_size", "2"}});
  auto latest = c.latest_metrics(run);
  REQUIRE(latest.size() == 3);
  CHECK(latest[0].key == "lr");
  CHECK(latest[1].key == "tokens_per_s");
  CHECK(std::isinf(latest[1].value));
  CHECK(latest[2].key == "train_loss");
  CHECK(latest[2].step == 30);
  CHECK(latest[2].value == Approx(10.0 / 30));
  auto hist = c.metric_history(run, "train_loss");
  REQUIRE(hist.size() == 30);
  CHECK(hist[0].step == 1);
  CHECK(hist[0].value == 10.0);
  CHECK(hist[0].timestamp > 1700000000000);
  c.update_run(run, "FINISHED");
  CHECK(store.get_run(run).info.status == "FINISHED");
  CHECK(store.get_run(run).info.end_time.has_value());
  try {
    c.log_param(run, "model_name", "other");
    FAIL("no error");
  } catch (const air::MlflowApiError& e) {
    CHECK(e.code() == "INVALID_PARAMETER_VALUE");
    CHECK(e.http_status() == 400);
  }
  air::MlflowClient wrong(server.url(), "nope");
  CHECK_THROWS_AS(wrong.latest_metrics(run), air::MlflowApiError);
}

TEST_CASE("mlflow client: ranks racing to create one experiment agree on its id") {
  air::test::TempDir dir;
  MlflowStore store(dir / "air.db");
  air::test::LoopbackServer server{[&](const std::string& m, const std::string& p, const std::string& b,
                                       const std::string&) { return handle_mlflow_request(store, m, p, b, true); }};
  std::vector<std::string> ids(4);
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&, i] { ids[i] = air::MlflowClient(server.url(), "").get_or_create_experiment("shared"); });
  for (auto& t : ts) t.join();
  for (const auto& id : ids) CHECK(id == ids[0]);
}
