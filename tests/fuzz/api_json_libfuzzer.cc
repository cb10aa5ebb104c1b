// libFuzzer target: the JSON bodies of the workspace API (core/wire/api.h, the agent's too). The first byte
// picks the wire type, the rest is the body. A body that parses must survive the round trip
// parse -> dump -> parse -> dump with equal text (nlohmann_json's own fuzzers check the same), and a
// malformed one must fail with nlohmann's exception (what the server turns into 400), never a crash.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/logs/line.h"
#include "core/wire/api.h"
#include "core/base/error.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using nlohmann::json;

template <typename T>
void round_trip(const json& j) {
  T first;
  try {
    first = j.get<T>();
  } catch (const json::exception&) {
    return;  // a field of the wrong type: rejected cleanly
  }
  std::string d1 = json(first).dump();
  T second = json::parse(d1).get<T>();
  std::string d2 = json(second).dump();
  FUZZ_CHECK(d1 == d2, "wire type round trip changed the JSON");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t kind = data[0];
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  if (kind % 16 == 15) {
    (void)air::logs::parse_log_line(body);
    return 0;
  }
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return 0;
  using namespace air::api;
  switch (kind % 16) {
    case 0: round_trip<SubmitRequest>(j); break;
    case 1: round_trip<ErrorBody>(j); break;
    case 2: round_trip<Metric>(j); break;
    case 3: round_trip<NodeInfo>(j); break;
    case 4: round_trip<AttemptInfo>(j); break;
    case 5: round_trip<RunInfo>(j); break;
    case 6: round_trip<RunList>(j); break;
    case 7: round_trip<CancelReply>(j); break;
    case 8: round_trip<NodeSpec>(j); break;
    case 9: round_trip<NodeStatusReport>(j); break;
    case 10: round_trip<NodeStatusReply>(j); break;
    case 11: round_trip<LogAppendReply>(j); break;
    case 12: round_trip<Health>(j); break;
    default: round_trip<NodeSpec>(j); break;
  }
  return 0;
}
