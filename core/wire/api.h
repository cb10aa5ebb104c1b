// Wire types of the workspace REST API (/api/air/v1/): every request and response body with its JSON
// mapping. Lenient on the wire: unknown fields are ignored and missing ones take their defaults, so a
// newer workspace still talks to an older CLI or agent. See docs/workspace.md for the endpoints.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/diagnostics.h"
#include "core/wire/run_state.h"

namespace air::api {

inline constexpr const char* kPrefix = "/api/air/v1";

// {"error": {"code", "message", "diagnostics": [...]}}
struct ErrorBody {
  std::string code;     // NOT_FOUND, INVALID_ARGUMENT, UNAUTHENTICATED, LOG_GAP, CONFLICT, INTERNAL
  std::string message;
  std::vector<Diagnostic> diagnostics;
};

// POST /runs
struct SubmitRequest {
  std::string workload_yaml;    // the YAML text after overrides (what the CLI validated)
  std::string file_name;        // as the user named it, so diagnostics read like local ones
  std::string base_dir;         // the YAML file's folder (for relative root_path in diagnostics)
  std::string snapshot_digest;  // hex SHA-256, empty when the workload has no snapshot
  uint64_t snapshot_bytes = 0;
  std::string idempotency_key;  // same key -> same run
};

struct NodeInfo {
  int rank = 0;
  NodeState state = NodeState::kPending;  // its name on the wire (core/wire/run_state.h)
  std::optional<int> exit_code;
  std::string message;
  std::optional<int> pid;  // the command's pid on its host
  std::string gpus;        // CUDA_VISIBLE_DEVICES given to this node ("" for CPU)
  std::string host;        // the node's host name, as its agent reported it ("" until it does)
  uint64_t log_bytes = 0;
  int64_t running_at_ms = 0;  // when its command started (the agent reported RUNNING)
};

// One MLflow metric value (the latest of its key for `get run`, or one point of its history).
struct Metric {
  std::string key;
  double value = 0;  // may be NaN or +-infinity (sent as "NaN", "Infinity", "-Infinity")
  int64_t timestamp = 0, step = 0;
};

struct AttemptInfo {
  int number = 1;
  std::string state = "PENDING";  // a RunState name
  int master_port = 0;
  int64_t started_at_ms = 0, ended_at_ms = 0;
  std::optional<int> failing_node;  // the first node that failed
  std::optional<int> failing_exit_code;
  std::vector<std::string> failing_lines;  // its last lines
  std::string reason;                      // why the attempt ended when it did not succeed
  std::string job_id;                      // the batch system's job (Slurm); empty on the local backend
  std::vector<NodeInfo> nodes;
  std::string mlflow_run_id;               // this attempt's MLflow run ("" when none)
  std::vector<Metric> metrics;             // latest value of each metric (GET /runs/{id} only)
};

// What a run's workload names under /Volumes, and what is there now (GET /runs/{id} only).
struct VolumeUsage {
  std::string path;  // "/Volumes/main/default/ckpt/tiny"
  uint64_t files = 0, bytes = 0;
  bool exists = false;
};

// One entry of a run's access list: the workload's `permissions:` (Databricks' job permission levels
// CAN_VIEW < CAN_MANAGE_RUN < CAN_MANAGE), exactly one principal each.
struct RunPermission {
  std::string user_name, group_name, service_principal_name;
  std::string permission_level;
};

// A warning about one node of a running attempt (core/health/stall.h): "stall" (no output and GPUs idle
// for half the stall timeout; the attempt ends at the whole) or "straggler" (its steps behind the leader's).
// Kept on the run after the condition clears (`active` false), so `air get run` and the page show it.
struct RunAlert {
  int attempt = 1;
  int node = 0;
  std::string kind;
  std::string message;
  int64_t at_ms = 0;
  bool active = true;
};

struct RunInfo {
  std::string run_id;
  std::string user;                          // the owner: who submitted it
  std::vector<RunPermission> permissions;    // who else may see or manage it
  std::string experiment_name;
  std::string state = "PENDING";
  std::string status_message;
  std::string accelerator_type;
  int num_accelerators = 0, accelerators_per_node = 0, num_nodes = 0;
  bool gpu = false;
  int max_retries = 0;
  std::optional<int> timeout_minutes;
  std::optional<double> stall_timeout_minutes;  // the stall watchdog (fractions allowed; 0: off)
  std::optional<double> straggler_minutes;      // the straggler alert's lag (0: off; none: the default)
  std::vector<RunAlert> alerts;                 // stall and straggler alerts, oldest first
  int64_t submitted_at_ms = 0, started_at_ms = 0, ended_at_ms = 0;
  std::string snapshot_digest;
  uint64_t snapshot_bytes = 0;
  std::string file_name;
  std::string workload_yaml;  // the configuration
  std::string idempotency_key;
  int current_attempt = 0;    // 0 until the first attempt starts
  std::vector<AttemptInfo> attempts;
  std::string pool_id;                     // compute.pool_id; "" for the workspace's default pool
  std::string priority_class = "NORMAL";   // BEST_EFFORT | NORMAL | CRITICAL
  // While the run waits for GPUs, from the scheduler's last pass (docs/scheduler.md); 0 / none otherwise.
  int queue_position = 0, queue_length = 0;
  int gpus_reserved = 0;                   // the head of its pool's queue: free GPUs held for it
  std::optional<int64_t> estimated_start_ms;
  std::vector<VolumeUsage> volumes;   // GET /runs/{id} only
  std::vector<std::string> notices;   // said once, in the reply to POST /runs (e.g. no private /Volumes)
};

struct RunList {
  std::vector<RunInfo> runs;  // newest first; without workload_yaml and attempts' lines
};

struct CancelReply {
  std::string run_id;
  std::string state;          // after the request
  bool already_terminal = false;
};

// GET /runs/{run}/attempts/{k}/nodes/{n}/spec
struct NodeSpec {
  std::string run_id;
  int attempt = 1, node_rank = 0, num_nodes = 1, local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string command;
  std::vector<std::pair<std::string, std::string>> env;  // env_variables, in file order
  struct Secret { std::string name, scope, key; };
  std::vector<Secret> secrets;
  std::string parameters_yaml;
  std::string snapshot_digest;
  std::string snapshot_path;  // "/Volumes/.../.internal/<sha256>.tar.zst" with code_source remote_volume, else ""
  bool gpu = false;
  uint64_t max_log_bytes = 0;
  std::vector<std::string> dependencies;  // environment.dependencies (pip requirements)
  std::string environment_version;        // environment.version
  std::string mlflow_run_id;              // the attempt's MLflow run ("" when none)
  uint64_t max_unpack_bytes = 0;          // the snapshot's unpack limits (0: the agent's defaults)
  uint64_t max_unpack_entries = 0;
  std::string volumes_root;               // the volume storage on this node's file system ("" when none)
  std::vector<std::string> volumes;       // "catalog/schema/volume" named by the workload that its owner may read
  std::vector<std::string> read_only_volumes;  // those of `volumes` its owner may not write: mounted read-only
  double system_metrics_interval_s = 10;  // system metrics every this many seconds (0: none logged)
  std::string step_pattern;               // a step line's pattern ("": air-train's, core/health/stall.h)
};

// POST /runs/{run}/attempts/{k}/nodes/{n}/status
struct NodeStatusReport {
  NodeState state = NodeState::kStarting;  // STARTING, RUNNING, SUCCEEDED or FAILED (the workspace says LOST)
  std::optional<int> exit_code;
  std::string message;
  std::optional<int> pid;
  std::string host;  // gethostname() of the agent's machine
  std::vector<std::string> last_lines;
  // What the stall watchdog and the straggler alert read (launcher/agent/system_metrics.h): the GPUs its
  // agent reads, how long ago one of them was last busy, the last step number in its output.
  int gpu_count = 0;
  std::optional<int64_t> gpu_idle_ms;
  std::optional<int64_t> step;
};

struct NodeStatusReply {
  std::string action = "continue";  // continue | stop
};

// POST .../logs?offset=O -> {"size": S}; 409 LOG_GAP also carries "size".
struct LogAppendReply {
  uint64_t size = 0;
};

// GET .../logs: the body is raw log bytes; these headers describe it.
inline constexpr const char* kHeaderLogOffset = "X-Air-Log-Offset";  // where the body starts
inline constexpr const char* kHeaderLogSize = "X-Air-Log-Size";      // the log's size now
inline constexpr const char* kHeaderLogDone = "X-Air-Log-Done";      // "1": this log will not grow
// A header name lower-cased: HTTP names are case-insensitive, and Client's header lookup takes lower case.
std::string header_key(std::string_view name);

// A node's routes, one home for the workspace's callers (the agent's spec, status and log shipping; the
// CLI's log poll): "/api/air/v1/runs/R/attempts/K/nodes/N/<what>" (what: "spec", "status", "logs").
std::string node_path(const std::string& run_id, int attempt, int node, std::string_view what);

struct Health {
  std::string status = "ok";
  std::string version;
  int pid = 0;
};

void to_json(nlohmann::json& j, const ErrorBody& v);
void from_json(const nlohmann::json& j, ErrorBody& v);
void to_json(nlohmann::json& j, const SubmitRequest& v);
void from_json(const nlohmann::json& j, SubmitRequest& v);
void to_json(nlohmann::json& j, const Metric& v);
void from_json(const nlohmann::json& j, Metric& v);
void to_json(nlohmann::json& j, const NodeInfo& v);
void from_json(const nlohmann::json& j, NodeInfo& v);
void to_json(nlohmann::json& j, const AttemptInfo& v);
void from_json(const nlohmann::json& j, AttemptInfo& v);
void to_json(nlohmann::json& j, const VolumeUsage& v);
void from_json(const nlohmann::json& j, VolumeUsage& v);
void to_json(nlohmann::json& j, const RunPermission& v);
void from_json(const nlohmann::json& j, RunPermission& v);
void to_json(nlohmann::json& j, const RunAlert& v);
void from_json(const nlohmann::json& j, RunAlert& v);
void to_json(nlohmann::json& j, const RunInfo& v);
void from_json(const nlohmann::json& j, RunInfo& v);
void to_json(nlohmann::json& j, const RunList& v);
void from_json(const nlohmann::json& j, RunList& v);
void to_json(nlohmann::json& j, const CancelReply& v);
void from_json(const nlohmann::json& j, CancelReply& v);
void to_json(nlohmann::json& j, const NodeSpec& v);
void from_json(const nlohmann::json& j, NodeSpec& v);
void to_json(nlohmann::json& j, const NodeStatusReport& v);
void from_json(const nlohmann::json& j, NodeStatusReport& v);
void to_json(nlohmann::json& j, const NodeStatusReply& v);
void from_json(const nlohmann::json& j, NodeStatusReply& v);
void to_json(nlohmann::json& j, const LogAppendReply& v);
void from_json(const nlohmann::json& j, LogAppendReply& v);
void to_json(nlohmann::json& j, const Health& v);
void from_json(const nlohmann::json& j, Health& v);

}  // namespace air::api
