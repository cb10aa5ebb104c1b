// Run states, ordered, with is_terminal(): the one vocabulary the workspace, the CLI and the agent share.
// Order matters: PENDING < RUNNING < every terminal state (a run never goes back).
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace air {

enum class RunState : int { kPending = 0, kRunning, kSucceeded, kFailed, kCanceled, kTimedOut };

bool is_terminal(RunState s);
std::string to_string(RunState s);
std::optional<RunState> run_state_from_string(std::string_view s);

// A node's own state inside one attempt (what the agent reports, plus the workspace's own verdicts).
// PENDING: not started; STARTING: agent up, preparing; RUNNING: command running; SUCCEEDED / FAILED:
// command ended; LOST: the agent stopped heartbeating.
bool is_node_terminal(std::string_view node_state);

}  // namespace air
