// MlflowStore over SQLite. Metric values keep NaN and infinities (SQLite would turn NaN into NULL, so a
// non-finite value is stored as text in `special`).
#include "server/store/mlflow.h"

#include <openssl/rand.h>

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "server/store/sqlite.h"

namespace air::server {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string new_run_id() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw Error("cannot generate a run id: the OS random source failed");
  std::string hex;
  for (unsigned char c : b) hex += fmt::format("{:02x}", c);
  return hex;
}

void validate_key(const std::string& what, const std::string& key) {
  bool ok = !key.empty() && key.size() <= kMaxEntityKeyLength && key.find("..") == std::string::npos &&
            key.front() != '/';
  for (char c : key) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                c == '-' || c == '.' || c == ' ' || c == '/');
  }
  if (!ok)
    throw MlflowError("INVALID_PARAMETER_VALUE",
                      fmt::format("Invalid {} name: '{}'. Names may only contain alphanumerics, underscores (_), "
                                  "dashes (-), periods (.), spaces ( ), and slashes (/), and be at most {} long",
                                  what, key.substr(0, 300), kMaxEntityKeyLength));
}

const char* special_of(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return nullptr;
}

double value_of(const sql::Stmt& st, int value_col, int special_col) {
  if (st.is_null(special_col)) return st.dbl(value_col);
  std::string s = st.text(special_col);
  if (s == "NaN") return std::nan("");
  return s == "Infinity" ? INFINITY : -INFINITY;
}

KeyValues key_values(sqlite3* db, const char* sql, const std::string& id) {
  sql::Stmt st(db, sql);
  st.bind(1, id);
  KeyValues out;
  while (st.step()) out.emplace_back(st.text(0), st.text(1));
  return out;
}

bool valid_status(const std::string& s) {
  return s == "RUNNING" || s == "SCHEDULED" || s == "FINISHED" || s == "FAILED" || s == "KILLED";
}

}  // namespace

void migrate_mlflow(sqlite3* db) {
  sql::exec(db, R"(
    CREATE TABLE IF NOT EXISTS mlflow_experiments(
      experiment_id INTEGER PRIMARY KEY,
      name TEXT NOT NULL UNIQUE,
      artifact_location TEXT NOT NULL,
      lifecycle_stage TEXT NOT NULL DEFAULT 'active',
      creation_time INTEGER NOT NULL,
      last_update_time INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS mlflow_experiment_tags(
      experiment_id INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
      PRIMARY KEY(experiment_id, key));
    CREATE TABLE IF NOT EXISTS mlflow_runs(
      run_id TEXT PRIMARY KEY,
      experiment_id INTEGER NOT NULL,
      run_name TEXT NOT NULL,
      user_id TEXT NOT NULL,
      status TEXT NOT NULL,
      start_time INTEGER NOT NULL,
      end_time INTEGER,
      artifact_uri TEXT NOT NULL,
      lifecycle_stage TEXT NOT NULL DEFAULT 'active');
    CREATE TABLE IF NOT EXISTS mlflow_params(
      run_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY(run_id, key));
    CREATE TABLE IF NOT EXISTS mlflow_tags(
      run_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY(run_id, key));
    CREATE TABLE IF NOT EXISTS mlflow_metrics(
      run_id TEXT NOT NULL, key TEXT NOT NULL, value REAL, special TEXT,
      timestamp INTEGER NOT NULL, step INTEGER NOT NULL);
    -- A covering index: a series is read as one index range, no table lookup per point (200,000 points:
    -- 3.2 s -> 0.4 s cold). It replaces the narrower index of earlier workspaces.
    CREATE INDEX IF NOT EXISTS mlflow_metrics_cover ON mlflow_metrics(run_id, key, step, timestamp, value, special);
    DROP INDEX IF EXISTS mlflow_metrics_by_run;
    CREATE TABLE IF NOT EXISTS air_attempt_mlflow_runs(
      air_run_id TEXT NOT NULL, attempt INTEGER NOT NULL, mlflow_run_id TEXT NOT NULL,
      PRIMARY KEY(air_run_id, attempt));
    CREATE INDEX IF NOT EXISTS air_attempt_mlflow_runs_by_mlflow ON air_attempt_mlflow_runs(mlflow_run_id);
    INSERT OR IGNORE INTO mlflow_experiments(experiment_id, name, artifact_location, creation_time, last_update_time)
      VALUES(0, 'Default', 'mlflow-artifacts:/0', CAST(strftime('%s', 'now') AS INTEGER) * 1000,
             CAST(strftime('%s', 'now') AS INTEGER) * 1000);
  )");
}

MlflowStore::MlflowStore(const std::string& db_path) : db_(std::make_unique<sql::Db>(db_path)) {
  migrate_mlflow(db_->get());
}

MlflowStore::~MlflowStore() = default;

std::string MlflowStore::create_experiment(const std::string& name, const std::string& artifact_location,
                                           const KeyValues& tags) {
  if (name.empty()) throw MlflowError("INVALID_PARAMETER_VALUE", "Experiment name must not be empty");
  for (const auto& [k, v] : tags) validate_key("tag", k);
  std::lock_guard lock(mu_);
  sql::Transaction tx(db_->get());
  sql::Stmt exists(db_->get(), "SELECT 1 FROM mlflow_experiments WHERE name = ?");
  exists.bind(1, name);
  if (exists.step())
    throw MlflowError("RESOURCE_ALREADY_EXISTS", fmt::format("Experiment '{}' already exists.", name));
  int64_t now = now_ms();
  sql::Stmt ins(db_->get(),
                "INSERT INTO mlflow_experiments(name, artifact_location, creation_time, last_update_time) "
                "VALUES(?, '', ?, ?)");
  ins.bind(1, name).bind(2, now).bind(3, now).run();
  int64_t id = sqlite3_last_insert_rowid(db_->get());
  std::string location = artifact_location.empty() ? fmt::format("mlflow-artifacts:/{}", id) : artifact_location;
  sql::Stmt(db_->get(), "UPDATE mlflow_experiments SET artifact_location = ? WHERE experiment_id = ?")
      .bind(1, location).bind(2, id).run();
  for (const auto& [k, v] : tags)
    sql::Stmt(db_->get(), "INSERT OR REPLACE INTO mlflow_experiment_tags VALUES(?, ?, ?)")
        .bind(1, id).bind(2, k).bind(3, v).run();
  tx.commit();
  return std::to_string(id);
}

std::optional<MlflowExperiment> MlflowStore::experiment_by_name(const std::string& name) {
  std::string id;
  {
    std::lock_guard lock(mu_);
    sql::Stmt st(db_->get(), "SELECT experiment_id FROM mlflow_experiments WHERE name = ?");
    st.bind(1, name);
    if (!st.step()) return std::nullopt;
    id = std::to_string(st.i64(0));
  }
  return experiment(id);
}

MlflowExperiment MlflowStore::experiment(const std::string& experiment_id) {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(),
               "SELECT experiment_id, name, artifact_location, lifecycle_stage, creation_time, last_update_time "
               "FROM mlflow_experiments WHERE CAST(experiment_id AS TEXT) = ?");
  st.bind(1, experiment_id);
  if (!st.step())
    throw MlflowError("RESOURCE_DOES_NOT_EXIST", fmt::format("No Experiment with id={} exists", experiment_id));
  MlflowExperiment e{std::to_string(st.i64(0)), st.text(1), st.text(2), st.text(3), st.i64(4), st.i64(5), {}};
  e.tags = key_values(db_->get(),
                      "SELECT key, value FROM mlflow_experiment_tags WHERE CAST(experiment_id AS TEXT) = ? "
                      "ORDER BY key",
                      e.experiment_id);
  return e;
}

std::string MlflowStore::get_or_create_experiment(const std::string& name) {
  if (auto e = experiment_by_name(name)) return e->experiment_id;
  try {
    return create_experiment(name);
  } catch (const MlflowError& e) {
    if (e.code() != "RESOURCE_ALREADY_EXISTS") throw;
    return experiment_by_name(name)->experiment_id;  // another caller created it first
  }
}

MlflowRun MlflowStore::create_run(const std::string& experiment_id, const std::string& run_name,
                                  const std::string& user_id, std::optional<int64_t> start_time, const KeyValues& tags) {
  MlflowExperiment exp = experiment(experiment_id);
  if (exp.lifecycle_stage != "active")
    throw MlflowError("INVALID_PARAMETER_VALUE", fmt::format("Experiment {} is not active", experiment_id));
  for (const auto& [k, v] : tags) validate_key("tag", k);
  std::string id = new_run_id();
  std::string name = run_name;
  for (const auto& [k, v] : tags)
    if (k == "mlflow.runName" && name.empty()) name = v;
  if (name.empty()) name = "run-" + id.substr(0, 8);
  std::lock_guard lock(mu_);
  sql::Transaction tx(db_->get());
  sql::Stmt ins(db_->get(),
                "INSERT INTO mlflow_runs(run_id, experiment_id, run_name, user_id, status, start_time, artifact_uri) "
                "VALUES(?, ?, ?, ?, 'RUNNING', ?, ?)");
  ins.bind(1, id).bind(2, static_cast<int64_t>(std::stoll(exp.experiment_id))).bind(3, name).bind(4, user_id);
  ins.bind(5, start_time.value_or(now_ms())).bind(6, exp.artifact_location + "/" + id + "/artifacts").run();
  for (const auto& [k, v] : tags)
    sql::Stmt(db_->get(), "INSERT OR REPLACE INTO mlflow_tags VALUES(?, ?, ?)").bind(1, id).bind(2, k).bind(3, v).run();
  sql::Stmt(db_->get(), "INSERT OR REPLACE INTO mlflow_tags VALUES(?, 'mlflow.runName', ?)").bind(1, id).bind(2, name).run();
  tx.commit();
  return get_run_locked(id);
}

MlflowRunInfo MlflowStore::run_info(const std::string& run_id) {
  sql::Stmt st(db_->get(),
               "SELECT run_id, experiment_id, run_name, user_id, status, artifact_uri, lifecycle_stage, start_time, "
               "end_time FROM mlflow_runs WHERE run_id = ?");
  st.bind(1, run_id);
  if (!st.step())
    throw MlflowError("RESOURCE_DOES_NOT_EXIST", fmt::format("Run with id={} not found", run_id.substr(0, 100)));
  MlflowRunInfo i{st.text(0), std::to_string(st.i64(1)), st.text(2), st.text(3), st.text(4), st.text(5), st.text(6),
                  st.i64(7), std::nullopt};
  if (!st.is_null(8)) i.end_time = st.i64(8);
  return i;
}

MlflowRun MlflowStore::get_run_locked(const std::string& run_id) {
  MlflowRun r;
  r.info = run_info(run_id);
  // The keys by index seeks (one MIN per key), then each key's latest row from the end of its index range:
  // a window over every row took 1.5 s for a 200,000-point run; this takes about a millisecond.
  sql::Stmt keys(db_->get(),
                 "WITH RECURSIVE k(key) AS (SELECT MIN(key) FROM mlflow_metrics WHERE run_id = ?1 UNION ALL "
                 "SELECT (SELECT MIN(key) FROM mlflow_metrics WHERE run_id = ?1 AND key > k.key) FROM k "
                 "WHERE k.key IS NOT NULL) SELECT key FROM k WHERE key IS NOT NULL");
  keys.bind(1, run_id);
  while (keys.step()) {
    sql::Stmt st(db_->get(),
                 "SELECT key, value, special, timestamp, step FROM mlflow_metrics WHERE run_id = ? AND key = ? "
                 "ORDER BY step DESC, timestamp DESC, value DESC LIMIT 1");
    st.bind(1, run_id).bind(2, keys.text(0));
    if (st.step()) r.metrics.push_back({st.text(0), value_of(st, 1, 2), st.i64(3), st.i64(4)});
  }
  r.params = key_values(db_->get(), "SELECT key, value FROM mlflow_params WHERE run_id = ? ORDER BY key", run_id);
  r.tags = key_values(db_->get(), "SELECT key, value FROM mlflow_tags WHERE run_id = ? ORDER BY key", run_id);
  return r;
}

MlflowRun MlflowStore::get_run(const std::string& run_id) {
  std::lock_guard lock(mu_);
  return get_run_locked(run_id);
}

MlflowRunInfo MlflowStore::update_run(const std::string& run_id, const std::optional<std::string>& status,
                                      std::optional<int64_t> end_time, const std::optional<std::string>& run_name) {
  if (status && !valid_status(*status))
    throw MlflowError("INVALID_PARAMETER_VALUE",
                      fmt::format("Invalid run status '{}': use RUNNING, SCHEDULED, FINISHED, FAILED or KILLED",
                                  status->substr(0, 50)));
  std::lock_guard lock(mu_);
  sql::Transaction tx(db_->get());
  run_info(run_id);  // exists?
  if (status) sql::Stmt(db_->get(), "UPDATE mlflow_runs SET status = ? WHERE run_id = ?").bind(1, *status).bind(2, run_id).run();
  if (end_time)
    sql::Stmt(db_->get(), "UPDATE mlflow_runs SET end_time = ? WHERE run_id = ?").bind(1, *end_time).bind(2, run_id).run();
  if (run_name && !run_name->empty()) {
    sql::Stmt(db_->get(), "UPDATE mlflow_runs SET run_name = ? WHERE run_id = ?").bind(1, *run_name).bind(2, run_id).run();
    sql::Stmt(db_->get(), "INSERT OR REPLACE INTO mlflow_tags VALUES(?, 'mlflow.runName', ?)")
        .bind(1, run_id).bind(2, *run_name).run();
  }
  tx.commit();
  return run_info(run_id);
}

void MlflowStore::log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics,
                            const KeyValues& params, const KeyValues& tags) {
  if (metrics.size() > kMaxBatchMetrics || params.size() > kMaxBatchParams || tags.size() > kMaxBatchTags ||
      metrics.size() + params.size() + tags.size() > kMaxBatchTotal)
    throw MlflowError("INVALID_PARAMETER_VALUE",
                      fmt::format("A batch logging request can contain at most {} metrics, {} params, {} tags and "
                                  "{} items in total; got {}, {}, {}",
                                  kMaxBatchMetrics, kMaxBatchParams, kMaxBatchTags, kMaxBatchTotal, metrics.size(),
                                  params.size(), tags.size()));
  for (const auto& m : metrics) validate_key("metric", m.key);
  for (const auto& [k, v] : params) {
    validate_key("parameter", k);
    if (v.size() > kMaxParamValueLength)
      throw MlflowError("INVALID_PARAMETER_VALUE", fmt::format("Param value for '{}' is longer than {} characters",
                                                               k, kMaxParamValueLength));
  }
  for (const auto& [k, v] : tags) {
    validate_key("tag", k);
    if (v.size() > kMaxTagValueLength)
      throw MlflowError("INVALID_PARAMETER_VALUE", fmt::format("Tag value for '{}' is longer than {} characters",
                                                               k, kMaxTagValueLength));
  }
  std::lock_guard lock(mu_);
  sql::Transaction tx(db_->get());
  MlflowRunInfo info = run_info(run_id);
  if (info.lifecycle_stage != "active")
    throw MlflowError("INVALID_PARAMETER_VALUE", fmt::format("The run {} must be in the 'active' state", run_id));
  for (const auto& [k, v] : params) {
    sql::Stmt old(db_->get(), "SELECT value FROM mlflow_params WHERE run_id = ? AND key = ?");
    old.bind(1, run_id).bind(2, k);
    if (old.step()) {
      if (old.text(0) != v)
        throw MlflowError("INVALID_PARAMETER_VALUE",
                          fmt::format("Changing param values is not allowed. Param with key='{}' was already logged "
                                      "with value='{}' for run ID='{}'. Attempted logging new value '{}'.",
                                      k, old.text(0), run_id, v));
      continue;
    }
    sql::Stmt(db_->get(), "INSERT INTO mlflow_params VALUES(?, ?, ?)").bind(1, run_id).bind(2, k).bind(3, v).run();
  }
  for (const auto& [k, v] : tags)
    sql::Stmt(db_->get(), "INSERT OR REPLACE INTO mlflow_tags VALUES(?, ?, ?)").bind(1, run_id).bind(2, k).bind(3, v).run();
  for (const auto& m : metrics) {
    sql::Stmt one(db_->get(),
                  "INSERT INTO mlflow_metrics(run_id, key, value, special, timestamp, step) VALUES(?, ?, ?, ?, ?, ?)");
    one.bind(1, run_id).bind(2, m.key);
    if (const char* sp = special_of(m.value)) one.bind_null(3).bind(4, std::string_view(sp));
    else one.bind(3, m.value).bind_null(4);
    one.bind(5, m.timestamp).bind(6, m.step).run();
  }
  tx.commit();
}

std::vector<MlflowMetric> MlflowStore::metric_history(const std::string& run_id, const std::string& key, size_t offset,
                                                      size_t limit, bool* more) {
  std::lock_guard lock(mu_);
  run_info(run_id);
  sql::Stmt st(db_->get(),
               "SELECT key, value, special, timestamp, step FROM mlflow_metrics WHERE run_id = ? AND key = ? "
               "ORDER BY step, timestamp, value, special, rowid LIMIT ? OFFSET ?");  // the covering index's order
  int64_t lim = limit == SIZE_MAX ? -1 : static_cast<int64_t>(limit) + 1;
  st.bind(1, run_id).bind(2, key).bind(3, lim).bind(4, static_cast<int64_t>(offset));
  std::vector<MlflowMetric> out;
  while (st.step()) out.push_back({st.text(0), value_of(st, 1, 2), st.i64(3), st.i64(4)});
  bool has_more = limit != SIZE_MAX && out.size() > limit;
  if (has_more) out.pop_back();
  if (more) *more = has_more;
  return out;
}

std::vector<MlflowMetric> MlflowStore::latest_metrics(const std::string& run_id) { return get_run(run_id).metrics; }

std::map<std::string, std::vector<MlflowMetric>> MlflowStore::all_metric_history(const std::string& run_id) {
  std::lock_guard lock(mu_);
  run_info(run_id);
  sql::Stmt st(db_->get(),
               "SELECT key, value, special, timestamp, step FROM mlflow_metrics WHERE run_id = ? "
               "ORDER BY key, step, timestamp, value, special, rowid");
  st.bind(1, run_id);
  std::map<std::string, std::vector<MlflowMetric>> out;
  while (st.step()) out[st.text(0)].push_back({st.text(0), value_of(st, 1, 2), st.i64(3), st.i64(4)});
  return out;
}

std::string MlflowStore::attempt_run(const std::string& air_run_id, int attempt, const std::string& experiment_name,
                                     const std::string& run_name) {
  if (auto known = attempt_runs(air_run_id); known.count(attempt)) return known[attempt];
  std::string exp = get_or_create_experiment(experiment_name.empty() ? "Default" : experiment_name);
  KeyValues tags = {{"air.run_id", air_run_id}, {"air.attempt", std::to_string(attempt)}};
  std::string name = run_name.empty() ? fmt::format("{}-attempt-{}", air_run_id, attempt)
                     : attempt == 1    ? run_name
                                       : fmt::format("{}-attempt-{}", run_name, attempt);
  MlflowRun run = create_run(exp, name, "air", std::nullopt, tags);
  std::lock_guard lock(mu_);
  sql::Stmt(db_->get(), "INSERT OR IGNORE INTO air_attempt_mlflow_runs VALUES(?, ?, ?)")
      .bind(1, air_run_id).bind(2, static_cast<int64_t>(attempt)).bind(3, run.info.run_id).run();
  sql::Stmt st(db_->get(), "SELECT mlflow_run_id FROM air_attempt_mlflow_runs WHERE air_run_id = ? AND attempt = ?");
  st.bind(1, air_run_id).bind(2, static_cast<int64_t>(attempt));
  return st.step() ? st.text(0) : run.info.run_id;
}

std::optional<std::string> MlflowStore::air_run_of(const std::string& mlflow_run_id) {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT air_run_id FROM air_attempt_mlflow_runs WHERE mlflow_run_id = ?");
  st.bind(1, mlflow_run_id);
  if (st.step()) return st.text(0);
  return std::nullopt;
}

std::map<int, std::string> MlflowStore::attempt_runs(const std::string& air_run_id) {
  std::lock_guard lock(mu_);
  sql::Stmt st(db_->get(), "SELECT attempt, mlflow_run_id FROM air_attempt_mlflow_runs WHERE air_run_id = ?");
  st.bind(1, air_run_id);
  std::map<int, std::string> out;
  while (st.step()) out[static_cast<int>(st.i64(0))] = st.text(1);
  return out;
}

}  // namespace air::server
