// HealthBook (server/health/run_health.h): heartbeats in, alerts and a stalled node out, as the workspace's
// stall watchdog uses it; and the test that keeps an agent's system sample from counting as progress.
#include <catch2/catch.hpp>

#include "server/health/run_health.h"

using namespace air;
using namespace air::health;

namespace {

constexpr int64_t kMin = 1000;  // a minute lasts 1 s here, as e2e tests shorten it
constexpr int64_t kT0 = 1700000000000;  // the workspace's clock is Unix time

api::AttemptInfo running(int nodes) {
  api::AttemptInfo a;
  for (int i = 0; i < nodes; ++i) {
    api::NodeInfo n;
    n.rank = i;
    n.state = air::NodeState::kRunning;
    a.nodes.push_back(n);
  }
  return a;
}

api::NodeStatusReport beat(int gpus, std::optional<int64_t> idle, std::optional<int64_t> step = {}) {
  api::NodeStatusReport r;
  r.state = air::NodeState::kRunning;
  r.gpu_count = gpus;
  r.gpu_idle_ms = idle;
  r.step = step;
  return r;
}

}  // namespace

TEST_CASE("health book: a GPU node gone quiet and idle is alerted, then stalled, a busy one never", "[health]") {
  HealthBook book;
  api::RunInfo info;
  info.run_id = "r1";
  api::AttemptInfo a = running(2);
  std::vector<int64_t> out = {0, 0};
  CHECK_FALSE(book.watch(info, a, out, kT0, kMin).changed);  // the watch starts at kT0
  for (int64_t t = 1000; t <= 20000; t += 1000) {
    book.heartbeat("r1", 1, 0, beat(8, 0), kT0 + t);      // node 0: GPUs busy now
    book.heartbeat("r1", 1, 1, beat(8, t), kT0 + t);      // node 1: idle since the start
    auto w = book.watch(info, a, out, kT0 + t, kMin);
    if (t < 10000) {
      CHECK(info.alerts.empty());
    } else if (t == 10000) {
      CHECK(w.changed);
      REQUIRE(info.alerts.size() == 1);
      CHECK(info.alerts[0].node == 1);
      CHECK(info.alerts[0].kind == "stall");
      CHECK(info.status_message == info.alerts[0].message);
      CHECK(info.alerts[0].message.rfind("node 1: no output and GPUs idle for 10 s;", 0) == 0);
    }
    if (t < 20000) CHECK_FALSE(w.stalled);
    else {
      REQUIRE(w.stalled);
      CHECK(w.stalled->rank == 1);
      CHECK(w.stalled->message == "node 1 stalled: no log line or metric and GPUs idle for 20 s (stall_timeout_minutes 20)");
      CHECK(info.alerts.size() == 1);  // node 0 (busy) never alerted
    }
  }
  // The attempt ends: its alerts stay, no longer active.
  book.forget(info, 1);
  CHECK_FALSE(info.alerts[0].active);
}

TEST_CASE("health book: output clears an alert, and stall_timeout_minutes 0 is off", "[health]") {
  HealthBook book;
  api::RunInfo info;
  info.run_id = "r2";
  info.stall_timeout_minutes = 4.0;
  api::AttemptInfo a = running(1);
  std::vector<int64_t> out = {0};
  book.watch(info, a, out, kT0, kMin);
  book.watch(info, a, out, kT0 + 2500, kMin);  // no GPUs, set explicitly: judged by output alone
  REQUIRE(info.alerts.size() == 1);
  CHECK(info.alerts[0].message.rfind("node 0: no output for 2.5 s;", 0) == 0);
  out[0] = kT0 + 3000;
  CHECK(book.watch(info, a, out, kT0 + 3000, kMin).changed);
  CHECK_FALSE(info.alerts[0].active);
  CHECK(info.status_message == "running; node 0 made progress again");
  info.stall_timeout_minutes = 0.0;
  CHECK_FALSE(book.watch(info, a, out, kT0 + 100000, kMin).stalled);
}

TEST_CASE("health book: the straggler's alert names it, and a later attempt starts afresh", "[health]") {
  HealthBook book;
  api::RunInfo info;
  info.run_id = "r3";
  info.straggler_minutes = 2;  // 2 s here
  api::AttemptInfo a = running(2);
  std::vector<int64_t> out = {1, 1};
  for (int64_t t = 0; t <= 6000; t += 500) {
    book.heartbeat("r3", 1, 0, beat(0, {}, t / 100), kT0 + t);  // 10 steps a second
    book.heartbeat("r3", 1, 1, beat(0, {}, t / 400), kT0 + t);  // 2.5 a second
    out = {kT0 + t, kT0 + t};
    book.watch(info, a, out, kT0 + t, kMin);
  }
  REQUIRE(info.alerts.size() == 1);
  CHECK(info.alerts[0].kind == "straggler");
  CHECK(info.alerts[0].node == 1);
  CHECK(info.alerts[0].message.rfind("node 1 is a straggler: at step 15 while node 0 is at step 60", 0) == 0);
  a.number = 2;  // a retry: no steps yet, no straggler
  book.watch(info, a, out, kT0 + 7000, kMin);
  CHECK(info.alerts.size() == 1);
}

TEST_CASE("an agent's system sample is not progress, anything else is", "[health]") {
  CHECK(only_system_metrics(R"({"run_id":"x","metrics":[{"key":"system/node_0/cpu_utilization_percentage","value":1,"timestamp":1}]})"));
  CHECK_FALSE(only_system_metrics(R"({"run_id":"x","metrics":[{"key":"system/node_0/cpu","value":1},{"key":"loss","value":2}]})"));
  CHECK_FALSE(only_system_metrics(R"({"run_id":"x","metrics":[]})"));
  CHECK_FALSE(only_system_metrics(R"({"run_id":"x","metrics":[{"key":"system/a","value":1}],"params":[{"key":"p","value":"v"}]})"));
  CHECK_FALSE(only_system_metrics("not json"));
}
