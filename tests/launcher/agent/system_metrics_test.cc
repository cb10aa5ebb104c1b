// The agent's system metrics (launcher/agent/system_metrics.h) with the fake libnvidia-ml
// (tests/core/health/fake_nvml.cc): names per node and per the node's own GPUs, the heartbeat's GPU figures,
// the POST to the MLflow route of a loopback server; and the step watcher on framed lines.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "launcher/agent/system_metrics.h"

using namespace air;
using namespace air::launcher;

namespace {

struct FakeGpus {
  std::string path = std::filesystem::temp_directory_path().string() + "/air_agent_gpus_" + std::to_string(::getpid());
  explicit FakeGpus(const std::string& text) {
    write(text);
    ::setenv("AIR_NVML_LIBRARY", AIR_FAKE_NVML, 1);
    ::setenv("AIR_FAKE_NVML_STATE", path.c_str(), 1);
  }
  void write(const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }
  ~FakeGpus() {
    std::filesystem::remove(path);
    ::unsetenv("AIR_NVML_LIBRARY");
    ::unsetenv("AIR_FAKE_NVML_STATE");
  }
};

}  // namespace

TEST_CASE("system metrics: MLflow's names under system/node_<rank>/, the node's own GPUs renumbered", "[health]") {
  FakeGpus gpus("5 100 81559 70\n88 42000 81559 510.5\n");
  SystemMetricsOptions o;
  o.node = 3;
  o.gpus = "1";  // this node has NVML's GPU 1 only: it is its gpu_0
  SystemMetrics m(nullptr, o, nullptr);
  auto first = m.sample();
  std::map<std::string, double> s(first.begin(), first.end());
  CHECK(s.at("system/node_3/gpu_0_utilization_percentage") == 88.0);
  CHECK(s.at("system/node_3/gpu_0_memory_usage_megabytes") == Approx(42000.0));
  CHECK(s.at("system/node_3/gpu_0_power_usage_watts") == Approx(510.5));
  CHECK_FALSE(s.count("system/node_3/gpu_1_utilization_percentage"));
  CHECK(s.count("system/node_3/system_memory_usage_megabytes"));
  CHECK(s.count("system/node_3/disk_usage_percentage"));
  CHECK(s.count("system/node_3/network_receive_megabytes"));
  auto second = m.sample();
  CHECK(std::map<std::string, double>(second.begin(), second.end()).count("system/node_3/cpu_utilization_percentage"));
  api::NodeStatusReport r;
  m.fill(r);
  CHECK(r.gpu_count == 1);
  REQUIRE(r.gpu_idle_ms);
  CHECK(*r.gpu_idle_ms < 5000);  // busy at the last sample
}

TEST_CASE("system metrics: idle GPUs read as idle since the start, no NVML as no GPUs", "[health]") {
  {
    FakeGpus gpus("0 100 81559 60\n3 100 81559 60\n");
    SystemMetrics m(nullptr, SystemMetricsOptions{}, nullptr);
    m.sample();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    api::NodeStatusReport r;
    m.fill(r);
    CHECK(r.gpu_count == 2);
    REQUIRE(r.gpu_idle_ms);
    CHECK(*r.gpu_idle_ms >= 30);
    gpus.write("50 100 81559 60\n3 100 81559 60\n");  // one busy GPU makes the node busy
    m.sample();
    m.fill(r);
    CHECK(*r.gpu_idle_ms < 30);
  }
  ::setenv("AIR_NVML_LIBRARY", "/no/such/libnvidia-ml.so.1", 1);
  SystemMetrics none(nullptr, SystemMetricsOptions{}, nullptr);
  auto s = none.sample();
  for (const auto& [k, v] : s) CHECK(k.find("gpu_") == std::string::npos);
  CHECK_FALSE(s.empty());
  api::NodeStatusReport r;
  none.fill(r);
  CHECK(r.gpu_count == 0);
  CHECK_FALSE(r.gpu_idle_ms);
  ::unsetenv("AIR_NVML_LIBRARY");
}

TEST_CASE("system metrics: one log-batch per sample to the attempt's MLflow run", "[health]") {
  httplib::Server srv;
  std::vector<nlohmann::json> got;
  std::string auth;
  srv.Post("/api/2.0/mlflow/runs/log-batch", [&](const httplib::Request& req, httplib::Response& res) {
    got.push_back(nlohmann::json::parse(req.body));
    auth = req.get_header_value("Authorization");
    res.set_content("{}", "application/json");
  });
  int port = srv.bind_to_any_port("127.0.0.1");
  std::thread t([&] { srv.listen_after_bind(); });
  SystemMetricsOptions o;
  o.mlflow_run_id = "mlrun-1";
  o.interval = std::chrono::milliseconds(20);
  {
    SystemMetrics m(std::make_unique<Client>("http://127.0.0.1:" + std::to_string(port), "node-tok"), o, nullptr);
    m.start();
    for (int i = 0; i < 200 && got.size() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    m.stop();
  }
  srv.stop();
  t.join();
  REQUIRE(got.size() >= 3);
  CHECK(got[0]["run_id"] == "mlrun-1");
  CHECK(auth == "Bearer node-tok");
  CHECK(got[1]["metrics"][0]["step"] == 1);
  for (const auto& m : got[1]["metrics"]) CHECK(m["key"].get<std::string>().rfind("system/node_0/", 0) == 0);
}

TEST_CASE("step watcher: the last step line of the framed output", "[health]") {
  StepWatcher w("");
  CHECK_FALSE(w.step());
  w.feed("1700000000000 o loading\n1700000000001 o step 1/30 | loss 6.9\n");
  CHECK(*w.step() == 1);
  w.feed("1700000000002 e warning: slow\n1700000000003 o {\"step\":1,\"loss\":6.9}\n");
  CHECK(*w.step() == 1);
  w.feed("1700000000004 o step 12/30 | loss 5.1\n");
  CHECK(*w.step() == 12);
  StepWatcher custom("iter (\\d+)");
  custom.feed("1 o epoch 0 iter 40 loss 2\n2 o done\n");
  CHECK(*custom.step() == 40);
  CHECK_THROWS_AS(StepWatcher("(bad"), Error);
}
