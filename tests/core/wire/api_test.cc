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
