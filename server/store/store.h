// The workspace's durable state in SQLite (WAL, busy_timeout): runs, attempts, nodes, tokens. Migrations
// are additive and keyed by PRAGMA user_version, so an older database opens in a newer workspace.
// Not thread-safe on its own: the Workspace serialises calls under its lock.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/wire/api.h"
#include "core/wire/run_state.h"

struct sqlite3;

namespace air::server {

// What the workspace keeps about a run beyond what the API shows.
// The run's and its attempts' states are enums here (`state`, `attempt_states`); the text in `info.state` and
// `info.attempts[i].state` is the wire's and the database's form only: wire() and the store write it from the
// enums, read_states() reads it back (a loaded or hand-built record). Nothing else reads that text.
struct RunRecord {
  api::RunInfo info;     // attempts and nodes included
  RunState state = RunState::kPending;
  std::vector<RunState> attempt_states;  // attempt n's state at [n - 1]
  int64_t seq = 0;       // submission order
  std::string spec_json; // the node spec template: command, env, parameters_yaml, local_world_size, gpu
  // Per node of the current attempt, the local backend's agent pid (0 when unknown).
  std::vector<int> agent_pids;
  std::string stop_reason;  // non-empty while the current attempt is being stopped
  std::string stop_kind;    // gang | cancel | timeout
  int64_t stop_started_ms = 0;

  // Attempt `number`'s state; an attempt with none recorded reads as FAILED (never running by mistake).
  RunState attempt_state(int number) const;
  void set_attempt_state(int number, RunState s);
  // The run as the wire shows it: info with the run's and attempts' state names filled in from the enums.
  api::RunInfo wire() const;
  // The enums from the text (a record loaded from the database or built from wire text); text we do not know
  // reads as FAILED, so that a record never stays running by mistake.
  void read_states();
};

class Store {
 public:
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;

  void add_token(const std::string& sha256_hex, const std::string& scope);
  void delete_tokens(const std::string& scope);
  // Every (hash, scope) pair; the workspace caches them in memory.
  std::vector<std::pair<std::string, std::string>> tokens() const;

  // Inserts or replaces the run with its attempts and nodes, in one transaction.
  void save_run(const RunRecord& r);
  // The run's own row, its attempts' rows and one node's row of attempt `attempt`, in one transaction: what
  // a node's heartbeat changes (a 100-node run's start then writes 100 small transactions, not 100 x 100 rows).
  void save_run_node(const RunRecord& r, int attempt, int rank);
  std::vector<RunRecord> load_runs() const;
  int64_t max_seq() const;

 private:
  void exec(const char* sql) const;
  void migrate();
  sqlite3* db_ = nullptr;
};

}  // namespace air::server
