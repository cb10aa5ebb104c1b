// The SQLite store: migrations, run round trips, tokens; and the log store's offset-idempotent appends.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>
#include <unistd.h>

#include <sqlite3.h>

#include "core/base/error.h"
#include "server/store/blobs.h"
#include "server/store/logs.h"
#include "server/store/mlflow.h"
#include "server/store/store.h"

namespace fs = std::filesystem;
using namespace air::server;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/air-server-test-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

RunRecord sample_run() {
  RunRecord r;
  r.seq = 7;
  r.info.run_id = "abc123";
  r.info.experiment_name = "exp";
  r.info.state = "RUNNING";
  r.info.num_nodes = 2;
  r.info.idempotency_key = "key-1";
  r.info.current_attempt = 2;
  r.spec_json = R"({"command":"echo hi"})";
  r.agent_pids = {101, 102};
  for (int k = 1; k <= 2; ++k) {
    air::api::AttemptInfo a;
    a.number = k;
    a.state = k == 1 ? "FAILED" : "RUNNING";
    a.master_port = 20000 + k;
    if (k == 1) {
      a.failing_node = 1;
      a.failing_exit_code = 3;
      a.failing_lines = {"boom", "last"};
      a.reason = "node 1 exited with code 3";
    }
    for (int n = 0; n < 2; ++n) {
      air::api::NodeInfo ni;
      ni.rank = n;
      ni.state = k == 1 ? air::NodeState::kFailed : air::NodeState::kRunning;
      if (k == 1) ni.exit_code = n == 1 ? 3 : 143;
      ni.pid = 500 + n;
      a.nodes.push_back(ni);
    }
    r.info.attempts.push_back(a);
  }
  r.read_states();  // the enums from the text above
  return r;
}

}  // namespace

TEST_CASE("store: a fresh database is migrated to the latest schema, and reopening keeps it") {
  TempDir d;
  { Store s(d.path + "/w.db"); CHECK(s.schema_version() == 1); }
  Store again(d.path + "/w.db");
  CHECK(again.schema_version() == 1);
  CHECK(again.load_runs().empty());
}

TEST_CASE("store: a run with attempts and nodes survives a reopen field by field") {
  TempDir d;
  { Store s(d.path + "/w.db"); s.save_run(sample_run()); }
  Store s(d.path + "/w.db");
  auto runs = s.load_runs();
  REQUIRE(runs.size() == 1);
  const RunRecord& r = runs[0];
  CHECK(r.info.run_id == "abc123");
  CHECK(r.seq == 7);
  CHECK(r.spec_json == R"({"command":"echo hi"})");
  CHECK(r.info.current_attempt == 2);
  REQUIRE(r.info.attempts.size() == 2);
  CHECK(r.info.attempts[0].failing_node == 1);
  CHECK(r.info.attempts[0].failing_exit_code == 3);
  CHECK(r.info.attempts[0].failing_lines == std::vector<std::string>{"boom", "last"});
  CHECK(r.info.attempts[1].master_port == 20002);
  REQUIRE(r.info.attempts[1].nodes.size() == 2);
  CHECK(r.info.attempts[1].nodes[1].pid == 501);
  CHECK_FALSE(r.info.attempts[1].nodes[1].exit_code.has_value());
  CHECK(r.agent_pids == std::vector<int>{101, 102});
  CHECK(s.max_seq() == 7);
}

TEST_CASE("store: saving a run again replaces it, the idempotency key stays unique") {
  TempDir d;
  Store s(d.path + "/w.db");
  RunRecord r = sample_run();
  s.save_run(r);
  r.state = air::RunState::kSucceeded;
  s.save_run(r);
  auto runs = s.load_runs();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].info.state == "SUCCEEDED");
  RunRecord other = sample_run();
  other.info.run_id = "other";
  CHECK_THROWS_AS(s.save_run(other), air::Error);  // same idempotency key, different run
  CHECK(s.load_runs().size() == 1);                  // and the failed save left nothing behind
}

// A heartbeat writes one node's row and the run's head (issue 22: a 100-node run's start no longer rewrites
// every node per report); the other nodes keep what was stored, and a full save still writes them all.
TEST_CASE("store: saving one node writes that node and the run's head, and leaves the others as stored") {
  TempDir d;
  Store s(d.path + "/w.db");
  RunRecord r = sample_run();
  s.save_run(r);
  r.info.status_message = "node 1 reported";
  r.info.attempts[1].nodes[1].state = air::NodeState::kSucceeded;
  r.info.attempts[1].nodes[1].exit_code = 0;
  r.info.attempts[1].nodes[0].state = air::NodeState::kLost;  // in memory only: save_run_node names node 1
  s.save_run_node(r, 2, 1);
  auto runs = s.load_runs();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].info.status_message == "node 1 reported");
  REQUIRE(runs[0].info.attempts.size() == 2);
  CHECK(runs[0].info.attempts[1].nodes[1].state == air::NodeState::kSucceeded);
  CHECK(runs[0].info.attempts[1].nodes[1].exit_code == 0);
  CHECK(runs[0].info.attempts[1].nodes[0].state == air::NodeState::kRunning);
  CHECK(runs[0].info.attempts[0].nodes[1].state == air::NodeState::kFailed);  // another attempt's node of the same rank
  CHECK(runs[0].agent_pids == std::vector<int>{101, 102});
  s.save_run(r);
  CHECK(s.load_runs()[0].info.attempts[1].nodes[0].state == air::NodeState::kLost);
}

TEST_CASE("store: tokens are kept by hash and scope, and a scope can be revoked") {
  TempDir d;
  Store s(d.path + "/w.db");
  s.add_token(sha256_hex("secret-a"), "admin");
  s.add_token(sha256_hex("secret-b"), "run:abc:1");
  s.delete_tokens("run:abc:1");
  auto t = s.tokens();
  REQUIRE(t.size() == 1);
  CHECK(t[0].first == sha256_hex("secret-a"));
  CHECK(t[0].first != "secret-a");
  CHECK(t[0].second == "admin");
}

TEST_CASE("log store: appends are idempotent by offset") {
  TempDir d;
  LogStore logs(d.path);
  LogKey k{"r1", 1, 0};
  CHECK(logs.append(k, 0, "a\nb\n").size == 4);            // offset == size: append
  CHECK(logs.append(k, 0, "a\nb\n").size == 4);            // already have it: no-op
  CHECK(logs.append(k, 2, "b\n").size == 4);               // inside: no-op
  auto overlap = logs.append(k, 2, "b\nc\n");              // straddles the end: only the tail
  CHECK(overlap.size == 6);
  CHECK_FALSE(overlap.gap);
  auto gap = logs.append(k, 9, "z\n");                     // beyond the end: gap, nothing written
  CHECK(gap.gap);
  CHECK(gap.size == 6);
  CHECK(slurp(logs.path(k)) == "a\nb\nc\n");
  LogStore reopened(d.path);                               // the size comes back from the file
  CHECK(reopened.size(k) == 6);
  CHECK(reopened.append(k, 6, "d\n").size == 8);
}

TEST_CASE("log store: reads cut at whole lines, tails count lines, and an append wakes the followers") {
  TempDir d;
  LogStore logs(d.path);
  LogKey k{"r1", 2, 1};
  logs.append(k, 0, "one\ntwo\nthree\n");
  CHECK(logs.tail_offset(k, 1) == 8);
  CHECK(logs.tail_offset(k, 2) == 4);
  CHECK(logs.tail_offset(k, 10) == 0);
  CHECK(logs.tail_offset(k, 0) == 14);
  auto c = logs.read(k, 0, 6);
  CHECK(c.data == "one\n");
  CHECK(c.size == 14);
  // A follower waits in the HTTP server (a deferred response, no thread); the store tells it of each append
  // through its listener (issue 43: the store's own blocking wait is gone, one long-poll is left).
  int woken = 0;
  logs.set_listener([&] { ++woken; });
  CHECK(logs.read(k, 14, 1 << 20).data.empty());
  logs.append(k, 14, "four\n");
  CHECK(woken == 1);
  CHECK(logs.read(k, 14, 1 << 20).data == "four\n");
}

TEST_CASE("log store: more logs growing at once than it keeps open, from many threads, lose nothing") {
  TempDir d;
  LogStore logs(d.path);
  constexpr int kLogs = 150, kRounds = 20;  // kLogs > LogStore's open-fd cap: fds are closed and reopened
  std::vector<std::thread> writers;
  std::atomic<int> gaps{0};  // Catch2's assertions are not thread-safe: count in the threads, check after
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round)
        for (int n = t; n < kLogs; n += 4) {
          LogKey k{"r" + std::to_string(n % 7), 1 + n % 3, n};
          std::string line = "round " + std::to_string(round) + "\n";
          uint64_t size = logs.size(k);
          if (logs.append(k, size, line).gap) ++gaps;
        }
    });
  for (auto& w : writers) w.join();
  CHECK(gaps == 0);
  std::string want;
  for (int round = 0; round < kRounds; ++round) want += "round " + std::to_string(round) + "\n";
  for (int n = 0; n < kLogs; ++n) {
    LogKey k{"r" + std::to_string(n % 7), 1 + n % 3, n};
    REQUIRE(slurp(logs.path(k)) == want);
    CHECK(logs.size(k) == want.size());
  }
  // The process holds a bounded number of log fds, not one per log.
  int open_logs = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = fs::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind(d.path, 0) == 0) ++open_logs;
  }
  CHECK(open_logs <= 64);
  CHECK(open_logs > 0);
}

TEST_CASE("blob store: an upload is accepted only when its content matches its name") {
  TempDir d;
  BlobStore blobs(d.path);
  std::string good = sha256_hex("hello");
  {
    auto w = blobs.begin(good, 100);
    REQUIRE(w->write("hel", 3));
    REQUIRE(w->write("lo", 2));
    w->commit();
  }
  CHECK(blobs.has(good));
  CHECK(blobs.size(good) == 5);
  std::string wrong = sha256_hex("other");
  {
    auto w = blobs.begin(wrong, 100);
    w->write("hello", 5);
    CHECK_THROWS_AS(w->commit(), air::Error);
  }
  CHECK_FALSE(blobs.has(wrong));
  CHECK(fs::is_empty(d.path + "/tmp"));  // the rejected upload left no file behind
  auto big = blobs.begin(sha256_hex("x"), 4);
  CHECK_FALSE(big->write("12345", 5));
}

// A metric series is read from one covering index range (issue 14: a 200,000-point chart's first open read
// the table row by row); a database made by an earlier workspace loses the narrower index when reopened.
TEST_CASE("mlflow store: a metric series is read from the covering index, in its order") {
  TempDir d;
  std::string db = d.path + "/w.db";
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw,
                         "CREATE TABLE mlflow_metrics(run_id TEXT NOT NULL, key TEXT NOT NULL, value REAL, special TEXT, "
                         "timestamp INTEGER NOT NULL, step INTEGER NOT NULL); CREATE INDEX mlflow_metrics_by_run ON "
                         "mlflow_metrics(run_id, key, step, timestamp);",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
  }
  { MlflowStore store(db); }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
  auto plan = [&](const char* sql) {
    std::string out;
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(raw, (std::string("EXPLAIN QUERY PLAN ") + sql).c_str(), -1, &st, nullptr) == SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) out += std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 3))) + "\n";
    sqlite3_finalize(st);
    return out;
  };
  std::string p = plan("SELECT key, value, special, timestamp, step FROM mlflow_metrics WHERE run_id = 'r' AND key = 'k' "
                       "ORDER BY step, timestamp, value, special, rowid");
  INFO(p);
  CHECK(p.find("COVERING INDEX mlflow_metrics_cover") != std::string::npos);
  CHECK(p.find("TEMP B-TREE") == std::string::npos);  // no sort: the index's order is the answer's
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(raw, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'mlflow_metrics_by_run'",
                             -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(sqlite3_column_int(st, 0) == 0);
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST_CASE("mlflow store: the workload's mlflow_run_name names attempt 1's run, a retry is suffixed") {
  TempDir d;
  MlflowStore store(d.path + "/mlflow.db");
  auto name_of = [&](const std::string& id) { return store.get_run(id).info.run_name; };
  CHECK(name_of(store.attempt_run("r1", 1, "exp", "sft_llama-8b")) == "sft_llama-8b");
  CHECK(name_of(store.attempt_run("r1", 2, "exp", "sft_llama-8b")) == "sft_llama-8b-attempt-2");
  CHECK(name_of(store.attempt_run("r2", 1, "exp")) == "r2-attempt-1");  // without one: the air run id
}
