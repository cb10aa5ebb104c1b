// Run states, ordered, with is_terminal(): the one vocabulary the workspace, the CLI and the agent share.
// Order matters: PENDING < RUNNING < every terminal state. PREEMPTED ends an attempt only (a CRITICAL
// run took its GPUs): the run itself goes back to PENDING, queued again with its place, and is never
// PREEMPTED itself. That is the one way back for a run.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace air {

enum class RunState : int { kPending = 0, kRunning, kSucceeded, kFailed, kCanceled, kTimedOut, kPreempted };

bool is_terminal(RunState s);
std::string to_string(RunState s);
std::optional<RunState> run_state_from_string(std::string_view s);

// A node's own state inside one attempt (what the agent reports, plus the workspace's own verdicts), an enum
// on api::NodeInfo; its name is written only on the wire and in the store. PENDING: not started; STARTING:
// agent up, preparing; RUNNING: command running; SUCCEEDED / FAILED: command ended; LOST: the agent stopped
// heartbeating (or its batch job ended under it). Order matters: every state from SUCCEEDED on is terminal.
enum class NodeState : int { kPending = 0, kStarting, kRunning, kSucceeded, kFailed, kLost };

bool is_terminal(NodeState s);
std::string to_string(NodeState s);
std::optional<NodeState> node_state_from_string(std::string_view s);

}  // namespace air
