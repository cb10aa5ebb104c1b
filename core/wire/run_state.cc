// Run state names and the terminal test.
#include "core/wire/run_state.h"

#include <array>

namespace air {

namespace {
constexpr std::array<std::string_view, 7> kNames = {"PENDING", "RUNNING",   "SUCCEEDED", "FAILED",
                                                     "CANCELED", "TIMED_OUT", "PREEMPTED"};
}

bool is_terminal(RunState s) { return static_cast<int>(s) >= static_cast<int>(RunState::kSucceeded); }

std::string to_string(RunState s) { return std::string(kNames.at(static_cast<size_t>(s))); }

std::optional<RunState> run_state_from_string(std::string_view s) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == s) return static_cast<RunState>(i);
  return std::nullopt;
}

namespace {
constexpr std::array<std::string_view, 6> kNodeNames = {"PENDING", "STARTING", "RUNNING",
                                                         "SUCCEEDED", "FAILED", "LOST"};
}

bool is_terminal(NodeState s) { return static_cast<int>(s) >= static_cast<int>(NodeState::kSucceeded); }

std::string to_string(NodeState s) { return std::string(kNodeNames.at(static_cast<size_t>(s))); }

std::optional<NodeState> node_state_from_string(std::string_view s) {
  for (size_t i = 0; i < kNodeNames.size(); ++i)
    if (kNodeNames[i] == s) return static_cast<NodeState>(i);
  return std::nullopt;
}

}  // namespace air
