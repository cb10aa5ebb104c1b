// The wire types read hostile bodies safely: found by fuzzing (tests/fuzz/corpus/api_json/regress_1).
#include <catch2/catch.hpp>

#include "core/wire/api.h"

using nlohmann::json;

TEST_CASE("wire types: an integer field given a float out of its range is a type error, not a wrap",
          "[api][fuzz]") {
  // 1.8e19 does not fit uint64_t: nlohmann's plain cast would be undefined behaviour.
  CHECK_THROWS_AS(json::parse(R"({"size": 18464447073709551615})").get<air::api::LogAppendReply>(),
                  json::type_error);
  CHECK_THROWS_AS(json::parse(R"({"rank": 1e30})").get<air::api::NodeInfo>(), json::type_error);
  CHECK_THROWS_AS(json::parse(R"({"exit_code": -1e10})").get<air::api::NodeStatusReport>(), json::type_error);
  // In range, a float still reads as before.
  CHECK(json::parse(R"({"size": 1024.0})").get<air::api::LogAppendReply>().size == 1024);
  CHECK(json::parse(R"({"size": 18446744073709551615})").get<air::api::LogAppendReply>().size ==
        18446744073709551615ull);
}

TEST_CASE("wire: a node's route and the log headers have one spelling") {
  CHECK(air::api::node_path("r-1", 2, 3, "logs") == "/api/air/v1/runs/r-1/attempts/2/nodes/3/logs");
  CHECK(air::api::node_path("r-1", 0, 0, "spec") == "/api/air/v1/runs/r-1/attempts/0/nodes/0/spec");
  CHECK(air::api::header_key(air::api::kHeaderLogOffset) == "x-air-log-offset");
  CHECK(air::api::header_key(air::api::kHeaderLogDone) == "x-air-log-done");
}

TEST_CASE("wire: a node's state is an enum with one name each, and a name this build does not know is refused") {
  using air::NodeState;
  const NodeState all[] = {NodeState::kPending, NodeState::kStarting, NodeState::kRunning,
                           NodeState::kSucceeded, NodeState::kFailed, NodeState::kLost};
  for (NodeState s : all) {
    CHECK(air::node_state_from_string(air::to_string(s)) == s);
    air::api::NodeInfo n;
    n.state = s;
    CHECK(json(n)["state"] == air::to_string(s));
    CHECK(json(n).get<air::api::NodeInfo>().state == s);
    CHECK(air::is_terminal(s) == (s == NodeState::kSucceeded || s == NodeState::kFailed || s == NodeState::kLost));
  }
  CHECK(air::to_string(NodeState::kStarting) == "STARTING");
  CHECK_FALSE(air::node_state_from_string("running").has_value());  // names are upper case, as on the wire
  CHECK_FALSE(air::node_state_from_string("").has_value());
  // Missing or null: the default (PENDING on a node, STARTING on a report); anything else is a type error.
  CHECK(json::parse(R"({"rank": 1})").get<air::api::NodeInfo>().state == NodeState::kPending);
  CHECK(json::parse(R"({"state": null})").get<air::api::NodeStatusReport>().state == NodeState::kStarting);
  CHECK(json::parse(R"({"state": "FAILED"})").get<air::api::NodeStatusReport>().state == NodeState::kFailed);
  CHECK_THROWS_AS(json::parse(R"({"state": "DANCING"})").get<air::api::NodeStatusReport>(), json::type_error);
  CHECK_THROWS_AS(json::parse(R"({"state": 2})").get<air::api::NodeInfo>(), json::type_error);
  try {
    (void)json::parse(R"({"state": "DANCING"})").get<air::api::NodeInfo>();
    FAIL("an unknown state was read");
  } catch (const json::type_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("'state' is not a node state (PENDING, STARTING, RUNNING"));
  }
}
