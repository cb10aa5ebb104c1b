// Run and node state names (each enum's values index its table) and the terminal tests.
#include "core/wire/run_state.h"

#include <array>

namespace air {

namespace {

constexpr std::array<std::string_view, 7> kRunNames = {"PENDING", "RUNNING",   "SUCCEEDED", "FAILED",
                                                        "CANCELED", "TIMED_OUT", "PREEMPTED"};
constexpr std::array<std::string_view, 6> kNodeNames = {"PENDING", "STARTING", "RUNNING",
                                                         "SUCCEEDED", "FAILED", "LOST"};

template <class E, size_t N>
std::optional<E> by_name(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace

bool is_terminal(RunState s) { return static_cast<int>(s) >= static_cast<int>(RunState::kSucceeded); }
std::string to_string(RunState s) { return std::string(kRunNames.at(static_cast<size_t>(s))); }
std::optional<RunState> run_state_from_string(std::string_view s) { return by_name<RunState>(kRunNames, s); }

bool is_terminal(NodeState s) { return static_cast<int>(s) >= static_cast<int>(NodeState::kSucceeded); }
std::string to_string(NodeState s) { return std::string(kNodeNames.at(static_cast<size_t>(s))); }
std::optional<NodeState> node_state_from_string(std::string_view s) { return by_name<NodeState>(kNodeNames, s); }

}  // namespace air
