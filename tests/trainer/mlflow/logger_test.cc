// air-train's MLflow logger against a real loopback HTTP server serving the workspace's MLflow subset
// (server/mlflow_api over a SQLite store): batched points arrive with their steps, a wrong token or a dead
// server warns once and never throws, and the training loop logs every step's loss from rank 0.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "server/api/mlflow.h"
#include "tests/server/secret_test_server.h"
#include "tests/server/secret_test_util.h"
#include "trainer/mlflow_logger.h"
#include "trainer/trainer.h"

using namespace air::server;
using air::train::MlflowLogger;

namespace {

struct Tracking {
  air::test::TempDir dir;
  MlflowStore store{dir / "air.db"};
  int requests = 0;
  air::test::LoopbackServer server{[this](const std::string& m, const std::string& p, const std::string& b,
                                          const std::string& token) {
    ++requests;
    return handle_mlflow_request(store, m, p, b, token == "tracking-token");
  }};
  std::string run_id = store.create_run(store.get_or_create_experiment("sft")).info.run_id;
};

MlflowLogger::Options options(const std::string& uri, const std::string& run, const std::string& token) {
  MlflowLogger::Options o;
  o.tracking_uri = uri;
  o.run_id = run;
  o.token = token;
  o.request_timeout = std::chrono::milliseconds(2000);
  o.max_batch = 7;  // several batches for 40 points
  return o;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("mlflow logger: batched points reach the run with their steps") {
  Tracking t;
  std::ostringstream warn;
  {
    MlflowLogger log(options(t.server.url(), t.run_id, "tracking-token"), air::train::parse_http_url(t.server.url()),
                     warn);
    for (int step = 1; step <= 20; ++step) log.log_step(step, {{"loss", 10.0 / step}, {"lr", 1e-3 * step}});
    CHECK(log.flush(std::chrono::seconds(20)));
    CHECK(log.points_sent() == 40);
  }
  CHECK(warn.str().empty());
  auto loss = t.store.metric_history(t.run_id, "loss");
  REQUIRE(loss.size() == 20);
  for (int i = 0; i < 20; ++i) {
    CHECK(loss[i].step == i + 1);
    CHECK(loss[i].value == Approx(10.0 / (i + 1)));
    CHECK(loss[i].timestamp > 1700000000000);
  }
  CHECK(t.store.metric_history(t.run_id, "lr").size() == 20);
  CHECK(t.requests >= 6);  // 40 points in batches of at most 7
}

TEST_CASE("mlflow logger: a wrong token warns once, never throws, and never prints the token") {
  Tracking t;
  std::ostringstream warn;
  {
    MlflowLogger log(options(t.server.url(), t.run_id, "s3cret-wrong-token"), air::train::parse_http_url(t.server.url()),
                     warn);
    for (int step = 1; step <= 20; ++step) log.log_step(step, {{"loss", 1.0}});
    log.flush(std::chrono::seconds(20));
    CHECK(log.points_sent() == 0);
  }
  INFO(warn.str());
  CHECK(count(warn.str(), "warning: MLflow logging") == 1);
  CHECK(warn.str().find("HTTP 401") != std::string::npos);
  CHECK(warn.str().find("s3cret") == std::string::npos);
  CHECK(t.store.metric_history(t.run_id, "loss").empty());
}

TEST_CASE("mlflow logger: a server that is gone warns once and lets training finish") {
  // A port nobody listens on: bind, note it, close.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  std::ostringstream warn;
  {
    MlflowLogger log(options(url, "run", ""), air::train::parse_http_url(url), warn);
    for (int step = 1; step <= 5; ++step) log.log_step(step, {{"loss", 1.0}});
    log.flush(std::chrono::seconds(20));
  }
  CHECK(count(warn.str(), "warning: MLflow logging") == 1);
  CHECK(warn.str().find("cannot connect") != std::string::npos);
}

TEST_CASE("mlflow logger: tracking URIs") {
  auto u = air::train::parse_http_url("http://ws.example:8470/prefix/");
  CHECK(u.host == "ws.example");
  CHECK(u.port == 8470);
  CHECK(u.path_prefix == "/prefix");
  CHECK(air::train::parse_http_url("http://127.0.0.1").port == 80);
  CHECK_THROWS_WITH(air::train::parse_http_url("https://x"),
                    Catch::Contains("not an http:// URL; air-train's built-in client speaks plain http only"));
  CHECK_THROWS_WITH(air::train::parse_http_url("http://x:99999"), Catch::Contains("bad port"));
  CHECK_THROWS_WITH(air::train::parse_http_url("http://user:pw@x"), Catch::Contains("must not carry credentials"));
}

TEST_CASE("mlflow logger: air-train logs every step's loss, lr, grad_norm and tokens/s from rank 0") {
  Tracking t;
  air::train::TrainConfig c;
  const std::string src = AIR_SOURCE_DIR;
  c.model_name = src + "/examples/tiny_model";
  c.dataset_name = src + "/examples/data/alpaca_tiny.json";
  c.init = "random";
  c.max_seq_len = 64;
  c.per_device_batch_size = 2;
  c.gradient_accumulation_steps = 1;
  c.max_steps = 6;
  c.log_every = 100;
  c.save = false;
  ::setenv("MLFLOW_TRACKING_URI", t.server.url().c_str(), 1);
  ::setenv("MLFLOW_RUN_ID", t.run_id.c_str(), 1);
  ::setenv("MLFLOW_TRACKING_TOKEN", "tracking-token", 1);
  std::ostringstream out;
  auto r = air::train::run_training(c, out);
  ::unsetenv("MLFLOW_TRACKING_URI");
  ::unsetenv("MLFLOW_RUN_ID");
  ::unsetenv("MLFLOW_TRACKING_TOKEN");
  INFO(out.str());
  CHECK(out.str().find("tracking-token") == std::string::npos);
  auto loss = t.store.metric_history(t.run_id, "loss");
  REQUIRE(loss.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(loss[i].step == static_cast<int64_t>(i + 1));
    CHECK(loss[i].value == Approx(r.losses[i]).epsilon(1e-9));
  }
  for (const char* key : {"lr", "grad_norm", "tokens_per_s", "step_time_s", "mfu"})
    CHECK(t.store.metric_history(t.run_id, key).size() == 6);
}
