// SQLite implementation of the store. Every statement is prepared, bound and finalised here; rows map to
// api:: structs field by field.
#include "server/store/store.h"

#include <sqlite3.h>

#include <map>

#include "core/base/error.h"

namespace air::server {

namespace {

using nlohmann::json;

// Each entry moves the schema one version up; never edit an entry, only append.
const char* const kMigrations[] = {
    R"(CREATE TABLE runs (
         run_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, info_json TEXT NOT NULL, spec_json TEXT NOT NULL,
         state TEXT NOT NULL, idempotency_key TEXT, stop_reason TEXT NOT NULL DEFAULT '',
         stop_kind TEXT NOT NULL DEFAULT '', stop_started_ms INTEGER NOT NULL DEFAULT 0);
       CREATE UNIQUE INDEX runs_idem ON runs(idempotency_key) WHERE idempotency_key <> '';
       CREATE TABLE attempts (
         run_id TEXT NOT NULL, number INTEGER NOT NULL, state TEXT NOT NULL, master_port INTEGER NOT NULL,
         started_at_ms INTEGER NOT NULL, ended_at_ms INTEGER NOT NULL, failing_node INTEGER,
         failing_exit_code INTEGER, failing_lines TEXT NOT NULL, reason TEXT NOT NULL,
         PRIMARY KEY (run_id, number));
       CREATE TABLE nodes (
         run_id TEXT NOT NULL, attempt INTEGER NOT NULL, rank INTEGER NOT NULL, state TEXT NOT NULL,
         exit_code INTEGER, message TEXT NOT NULL, pid INTEGER, gpus TEXT NOT NULL,
         agent_pid INTEGER NOT NULL DEFAULT 0, running_at_ms INTEGER NOT NULL DEFAULT 0,
         PRIMARY KEY (run_id, attempt, rank));
       CREATE TABLE tokens (hash TEXT PRIMARY KEY, scope TEXT NOT NULL, created_at_ms INTEGER NOT NULL);)",
};

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw Error(std::string("workspace database: ") + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::optional<int>& v) {
    if (v) sqlite3_bind_int64(s_, i, *v);
    else sqlite3_bind_null(s_, i);
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(std::string("workspace database: ") + sqlite3_errmsg(db_));
  }
  std::string text(int c) const {
    auto* p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, c)) : std::string();
  }
  int64_t num(int c) const { return sqlite3_column_int64(s_, c); }
  std::optional<int> opt(int c) const {
    if (sqlite3_column_type(s_, c) == SQLITE_NULL) return std::nullopt;
    return static_cast<int>(sqlite3_column_int64(s_, c));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace

Store::Store(const std::string& path) {
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error("cannot open workspace database " + path + ": " + why);
  }
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
  migrate();
}

Store::~Store() { sqlite3_close(db_); }

void Store::exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error("workspace database: " + why);
  }
}

int Store::schema_version() const {
  Stmt s(db_, "PRAGMA user_version");
  s.step();
  return static_cast<int>(s.num(0));
}

void Store::migrate() {
  int have = schema_version();
  int want = static_cast<int>(std::size(kMigrations));
  if (have > want)
    throw Error("the workspace database has schema version " + std::to_string(have) +
                    ", newer than this air understands (" + std::to_string(want) + ")",
                "upgrade air");
  for (int v = have; v < want; ++v) {
    exec("BEGIN IMMEDIATE");
    try {
      exec(kMigrations[v]);
      exec(("PRAGMA user_version=" + std::to_string(v + 1)).c_str());
      exec("COMMIT");
    } catch (...) {
      exec("ROLLBACK");
      throw;
    }
  }
}

void Store::add_token(const std::string& hash, const std::string& scope) {
  Stmt s(db_, "INSERT OR REPLACE INTO tokens(hash, scope, created_at_ms) VALUES(?, ?, strftime('%s','now')*1000)");
  s.bind(1, hash).bind(2, scope).step();
}

void Store::delete_tokens(const std::string& scope) {
  Stmt s(db_, "DELETE FROM tokens WHERE scope = ?");
  s.bind(1, scope).step();
}

std::vector<std::pair<std::string, std::string>> Store::tokens() const {
  Stmt s(db_, "SELECT hash, scope FROM tokens");
  std::vector<std::pair<std::string, std::string>> out;
  while (s.step()) out.emplace_back(s.text(0), s.text(1));
  return out;
}

RunState RunRecord::attempt_state(int number) const {
  return number >= 1 && number <= static_cast<int>(attempt_states.size()) ? attempt_states[number - 1]
                                                                           : RunState::kFailed;
}

void RunRecord::set_attempt_state(int number, RunState s) {
  if (number < 1) return;
  if (static_cast<int>(attempt_states.size()) < number) attempt_states.resize(number, RunState::kPending);
  attempt_states[number - 1] = s;
}

api::RunInfo RunRecord::wire() const {
  api::RunInfo out = info;
  out.state = to_string(state);
  for (auto& a : out.attempts) a.state = to_string(attempt_state(a.number));
  return out;
}

void RunRecord::read_states() {
  state = run_state_from_string(info.state).value_or(RunState::kFailed);
  attempt_states.clear();
  for (const auto& a : info.attempts)
    set_attempt_state(a.number, run_state_from_string(a.state).value_or(RunState::kFailed));
}

namespace {

void write_head(sqlite3* db, const RunRecord& r) {
  api::RunInfo head = r.info;
  head.attempts.clear();
  head.state = to_string(r.state);
  Stmt run(db,
           "INSERT INTO runs(run_id, seq, info_json, spec_json, state, idempotency_key, stop_reason, "
           "stop_kind, stop_started_ms) VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE SET "
           "seq=excluded.seq, info_json=excluded.info_json, spec_json=excluded.spec_json, state=excluded.state, "
           "idempotency_key=excluded.idempotency_key, stop_reason=excluded.stop_reason, "
           "stop_kind=excluded.stop_kind, stop_started_ms=excluded.stop_started_ms");
  run.bind(1, r.info.run_id).bind(2, r.seq).bind(3, json(head).dump()).bind(4, r.spec_json)
      .bind(5, head.state).bind(6, r.info.idempotency_key).bind(7, r.stop_reason).bind(8, r.stop_kind)
      .bind(9, r.stop_started_ms).step();
  for (const auto& a : r.info.attempts) {
    Stmt at(db,
            "INSERT OR REPLACE INTO attempts(run_id, number, state, master_port, started_at_ms, ended_at_ms, "
            "failing_node, failing_exit_code, failing_lines, reason) VALUES(?,?,?,?,?,?,?,?,?,?)");
    at.bind(1, r.info.run_id).bind(2, a.number).bind(3, to_string(r.attempt_state(a.number))).bind(4, a.master_port)
        .bind(5, a.started_at_ms).bind(6, a.ended_at_ms).bind(7, a.failing_node)
        .bind(8, a.failing_exit_code).bind(9, json(a.failing_lines).dump()).bind(10, a.reason).step();
  }
}

void write_node(sqlite3* db, const RunRecord& r, const api::AttemptInfo& a, const api::NodeInfo& n) {
  const bool current = a.number == r.info.current_attempt;
  const int agent_pid = current && n.rank < static_cast<int>(r.agent_pids.size()) ? r.agent_pids[n.rank] : 0;
  Stmt nd(db,
          "INSERT OR REPLACE INTO nodes(run_id, attempt, rank, state, exit_code, message, pid, gpus, "
          "agent_pid, running_at_ms) VALUES(?,?,?,?,?,?,?,?,?,?)");
  nd.bind(1, r.info.run_id).bind(2, a.number).bind(3, n.rank).bind(4, to_string(n.state)).bind(5, n.exit_code)
      .bind(6, n.message).bind(7, n.pid).bind(8, n.gpus).bind(9, agent_pid)
      .bind(10, n.running_at_ms).step();
}

}  // namespace

void Store::save_run(const RunRecord& r) {
  exec("BEGIN IMMEDIATE");
  try {
    write_head(db_, r);
    for (const auto& a : r.info.attempts)
      for (const auto& n : a.nodes) write_node(db_, r, a, n);
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

void Store::save_run_node(const RunRecord& r, int attempt, int rank) {
  exec("BEGIN IMMEDIATE");
  try {
    write_head(db_, r);
    for (const auto& a : r.info.attempts)
      if (a.number == attempt)
        for (const auto& n : a.nodes)
          if (n.rank == rank) write_node(db_, r, a, n);
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

std::vector<RunRecord> Store::load_runs() const {
  std::vector<RunRecord> out;
  std::map<std::string, size_t> index;
  {
    Stmt s(db_, "SELECT run_id, seq, info_json, spec_json, stop_reason, stop_kind, stop_started_ms "
                "FROM runs ORDER BY seq");
    while (s.step()) {
      RunRecord r;
      r.info = json::parse(s.text(2)).get<api::RunInfo>();
      r.info.run_id = s.text(0);
      r.info.attempts.clear();
      r.seq = s.num(1);
      r.spec_json = s.text(3);
      r.stop_reason = s.text(4);
      r.stop_kind = s.text(5);
      r.stop_started_ms = s.num(6);
      index[r.info.run_id] = out.size();
      out.push_back(std::move(r));
    }
  }
  {
    Stmt s(db_, "SELECT run_id, number, state, master_port, started_at_ms, ended_at_ms, failing_node, "
                "failing_exit_code, failing_lines, reason FROM attempts ORDER BY run_id, number");
    while (s.step()) {
      auto it = index.find(s.text(0));
      if (it == index.end()) continue;
      api::AttemptInfo a;
      a.number = static_cast<int>(s.num(1));
      a.state = s.text(2);
      a.master_port = static_cast<int>(s.num(3));
      a.started_at_ms = s.num(4);
      a.ended_at_ms = s.num(5);
      a.failing_node = s.opt(6);
      a.failing_exit_code = s.opt(7);
      a.failing_lines = json::parse(s.text(8)).get<std::vector<std::string>>();
      a.reason = s.text(9);
      out[it->second].info.attempts.push_back(std::move(a));
    }
  }
  {
    Stmt s(db_, "SELECT run_id, attempt, rank, state, exit_code, message, pid, gpus, agent_pid, running_at_ms FROM nodes "
                "ORDER BY run_id, attempt, rank");
    while (s.step()) {
      auto it = index.find(s.text(0));
      if (it == index.end()) continue;
      RunRecord& r = out[it->second];
      int attempt = static_cast<int>(s.num(1));
      for (auto& a : r.info.attempts) {
        if (a.number != attempt) continue;
        api::NodeInfo n;
        n.rank = static_cast<int>(s.num(2));
        n.state = node_state_from_string(s.text(3)).value_or(NodeState::kLost);  // a name this build does not know
        n.exit_code = s.opt(4);
        n.message = s.text(5);
        n.pid = s.opt(6);
        n.gpus = s.text(7);
        n.running_at_ms = s.num(9);
        a.nodes.push_back(n);
        if (attempt == r.info.current_attempt) {
          if (static_cast<int>(r.agent_pids.size()) <= n.rank) r.agent_pids.resize(n.rank + 1, 0);
          r.agent_pids[n.rank] = static_cast<int>(s.num(8));
        }
      }
    }
  }
  for (RunRecord& r : out) r.read_states();
  return out;
}

int64_t Store::max_seq() const {
  Stmt s(db_, "SELECT COALESCE(MAX(seq), 0) FROM runs");
  s.step();
  return s.num(0);
}

}  // namespace air::server
