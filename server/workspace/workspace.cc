// Run lifecycle and gang scheduling. A run's current attempt ends in one of four ways: every node
// succeeded; a node failed or was lost (gang stop, then retry while retries remain); cancel; timeout.
// Every state change is written to SQLite before it is answered, so a restarted workspace resumes.
#include "server/workspace/workspace.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "core/base/error.h"
#include "core/base/host.h"
#include "core/wire/run_state.h"
#include "core/sandbox/sandbox.h"
#include "core/volumes/workload_volumes.h"
#include "core/workload/workload.h"
#include "server/workspace/services.h"

namespace air::server {

namespace fs = std::filesystem;
using nlohmann::json;

std::string random_token() {
  unsigned char b[32];
  if (RAND_bytes(b, sizeof b) != 1) throw Error("cannot generate a random token");
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string s = "air_";
  for (unsigned char c : b) s += a[c & 63];
  return s;
}

namespace {

int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

HttpError not_found(const std::string& what) { return HttpError(404, "NOT_FOUND", what); }

}  // namespace

// The /Volumes paths a run's workload names: in its command, env_variables and parameters.
std::vector<std::string> named_volume_paths(const std::string& spec_json) {
  auto t = json::parse(spec_json);
  std::string text = t.value("command", "") + "\n" + t.value("parameters_yaml", "");
  for (const auto& kv : t.value("env", json::array())) text += "\n" + kv.at(1).get<std::string>();
  return volume_paths_in(text);
}

Workspace::Workspace(WorkspaceOptions opts, std::unique_ptr<Backend> backend)
    : opts_(std::move(opts)),
      backend_(std::move(backend)),
      store_((fs::create_directories(opts_.home), opts_.home + "/workspace.db")),
      blobs_(opts_.home + "/blobs"),
      volumes_(opts_.volumes_root.empty() ? opts_.home + "/volumes" : opts_.volumes_root),
      logs_(opts_.home + "/runs"),
      services_(std::make_unique<WorkspaceServices>(opts_.home + "/workspace.db")),
      identity_(std::make_unique<IdentityStore>(opts_.home + "/workspace.db", opts_.admin_user)),
      volume_acl_(std::make_unique<VolumeAcl>(opts_.home + "/workspace.db")),
      snapshot_uploads_(std::make_unique<SnapshotUploads>(opts_.home + "/workspace.db")) {
  if (!opts_.now_ms) opts_.now_ms = system_now_ms;
  adopt_volume_folders();  // volumes from before owners existed are the bootstrap admin's
  setup_pools();
}

Workspace::~Workspace() { stop(); }

void Workspace::set_url(const std::string& url) {
  std::lock_guard<std::mutex> g(mu_);
  url_ = url;
}

int64_t Workspace::prune_audit(bool force) {
  int64_t t = now();
  if (opts_.audit_retention_days <= 0 || (!force && t - audit_pruned_ms_.load() < 3'600'000)) return 0;
  audit_pruned_ms_ = t;
  try {
    return identity_->prune_audit(t - int64_t{opts_.audit_retention_days} * 86'400'000);
  } catch (const std::exception& e) {  // a busy or full database: the next hour tries again
    std::fprintf(stderr, "air server: cannot prune the audit log: %s\n", e.what());
    return 0;
  }
}

void Workspace::start() {
  prune_audit(true);
  {
    std::lock_guard<std::mutex> g(mu_);
    // Bootstrap admin tokens of workspaces from before it was a listed user token (one kept per start, never
    // revoked): deleted; create_admin_token makes the one token of this start.
    store_.delete_tokens("admin");
    for (const auto& [hash, scope] : store_.tokens()) {
      if (scope.rfind("run:", 0) != 0) continue;  // node tokens are the only ones kept here now
      Principal p;
      auto colon = scope.rfind(':');
      p.run_id = scope.substr(4, colon - 4);
      p.attempt = std::atoi(scope.c_str() + colon + 1);
      tokens_[hash] = p;
    }
    seq_ = store_.max_seq();
    for (auto& r : store_.load_runs()) {
      if (!r.info.idempotency_key.empty()) idempotency_[r.info.idempotency_key] = r.info.run_id;
      if (r.info.user.empty()) r.info.user = identity_->bootstrap_admin();  // runs from before users existed
      services_->add_metrics(r.info, false);  // the attempts' MLflow run ids live in the MLflow tables
      std::string id = r.info.run_id;
      if (!is_terminal(run_state_from_string(r.info.state).value_or(RunState::kFailed))) active_.insert(id);
      runs_[id] = std::move(r);
    }
    // Agents keep running while the workspace is down; give each one a full heartbeat window to re-attach.
    for (auto& [id, r] : runs_) {
      auto state = run_state_from_string(r.info.state).value_or(RunState::kFailed);
      if (is_terminal(state)) continue;
      if (auto* a = current(r)) {
        restarted_runs_.insert(id);
        for (const auto& n : a->nodes) runtime_[{id, a->number, n.rank}].last_seen_ms = now();
        if (!waiting(r) && !is_terminal(run_state_from_string(a->state).value_or(RunState::kFailed)))
          claim_gpus(*a);
      }
    }
    schedule();  // the queue as it was: places from the stored submit times, before the first request
  }
  stopping_ = false;
  if (!opts_.ticker) return;
  ticker_ = std::thread([this] {
    while (!stopping_) {
      try {
        tick();
      } catch (const std::exception& e) {
        // A failing pass must not take the workspace down; the next pass retries.
        std::fprintf(stderr, "air server: scheduler pass failed: %s\n", e.what());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(opts_.tick_ms));
    }
  });
}

void Workspace::stop() {
  stopping_ = true;
  if (ticker_.joinable()) ticker_.join();
  logs_.wake();
}

std::string Workspace::create_admin_token() {
  std::string token = random_token();
  identity_->replace_bootstrap_token(sha256_hex(token), now());
  return token;
}

Principal Workspace::bootstrap_principal() const {
  Principal p;
  p.admin = true;
  p.user = identity_->bootstrap_admin();
  p.groups = identity_->groups_of(p.user);
  return p;
}

std::optional<Principal> Workspace::authenticate(const std::string& token, std::string* why) const {
  auto refuse = [why](const char* reason) -> std::optional<Principal> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (token.empty()) return refuse("a bearer token is required (Authorization: Bearer <token>)");
  std::string hash = sha256_hex(token);
  std::optional<Principal> p;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = tokens_.find(hash); it != tokens_.end()) {
      p = it->second;
      if (p->is_node())
        if (auto r = runs_.find(p->run_id); r != runs_.end()) p->owner = r->second.info.user;
    }
  }
  if (p) {
    if (p->is_node()) {
      p->owner_groups = identity_->groups_of(p->owner);
      p->owner_admin = identity_->is_admin(p->owner);
    }
    else p->groups = identity_->groups_of(p->user);
    return p;
  }
  auto t = identity_->token_by_hash(hash);
  if (!t) return refuse("the token is unknown or was revoked");
  if (t->expiry_ms >= 0 && now() >= t->expiry_ms) return refuse("the token has expired");
  auto u = identity_->user(t->user_name);
  if (!u || !u->active) return refuse("the token's user is deactivated");
  Principal q;
  q.user = t->user_name;
  q.groups = identity_->groups_of(q.user);
  q.admin = std::find(q.groups.begin(), q.groups.end(), kAdminsGroup) != q.groups.end();
  return q;
}

std::pair<std::string, TokenInfo> Workspace::create_token(const std::string& user, int64_t lifetime_s,
                                                          const std::string& comment) {
  std::string token = "dapi" + random_token();  // Databricks' personal tokens start with dapi
  int64_t t = now();
  TokenInfo info = identity_->add_token(user, sha256_hex(token), comment, t, lifetime_s > 0 ? t + lifetime_s * 1000 : -1);
  return {token, info};
}

Workspace::RunAccess Workspace::run_access(const std::string& run_id) const {
  std::lock_guard<std::mutex> g(mu_);
  const RunRecord& r = find(run_id);
  return {r.info.user, r.info.permissions};
}

std::optional<std::string> Workspace::snapshot_refusal(const Principal& who, const std::string& digest) const {
  if (who.admin) return std::nullopt;
  if (!who.is_node() && !who.user.empty() && snapshot_uploads_->uploaded_by(digest, who.user)) return std::nullopt;
  std::lock_guard<std::mutex> g(mu_);
  if (who.is_node()) {
    auto it = runs_.find(who.run_id);
    if (it != runs_.end() && it->second.info.snapshot_digest == digest) return std::nullopt;
    return fmt::format("a node token may read only its own run's snapshot; run {} was not made from snapshot {}",
                       who.run_id, digest);
  }
  for (const auto& [id, r] : runs_)
    if (r.info.snapshot_digest == digest && run_level(who, r.info.user, r.info.permissions) >= RunLevel::kCanView)
      return std::nullopt;
  return fmt::format("user '{}' neither uploaded snapshot {} nor may view a run made from it", who.user, digest);
}

void Workspace::require_run(const Principal& who, const std::string& run_id, RunLevel need) const {
  RunAccess a = run_access(run_id);
  // A run the caller may not view is answered as one that does not exist (find()'s own words): no owner named.
  if (!who.is_node() && run_level(who, a.owner, a.grants) < RunLevel::kCanView) throw not_found("run " + run_id + " not found");
  if (auto why = run_refusal(who, run_id, a.owner, a.grants, need)) throw HttpError(403, "PERMISSION_DENIED", *why);
}

std::vector<const RunRecord*> Workspace::active_runs() const {
  std::vector<const RunRecord*> out;
  out.reserve(active_.size());
  for (const std::string& id : active_) {
    const RunRecord& r = find(id);
    if (!is_terminal(run_state_from_string(r.info.state).value_or(RunState::kFailed))) out.push_back(&r);
  }
  return out;
}

std::vector<RunRecord*> Workspace::active_runs() {
  std::vector<RunRecord*> out;
  for (const RunRecord* r : std::as_const(*this).active_runs()) out.push_back(const_cast<RunRecord*>(r));
  return out;
}

RunRecord& Workspace::find(const std::string& id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) throw not_found("run " + id + " not found");
  return it->second;
}

const RunRecord& Workspace::find(const std::string& id) const {
  auto it = runs_.find(id);
  if (it == runs_.end()) throw not_found("run " + id + " not found");
  return it->second;
}

api::AttemptInfo* Workspace::current(RunRecord& r) {
  for (auto& a : r.info.attempts)
    if (a.number == r.info.current_attempt) return &a;
  return nullptr;
}

void Workspace::save(const RunRecord& r) { store_.save_run(r); }

std::string Workspace::new_run_id() const {
  for (;;) {
    unsigned char b[4];
    RAND_bytes(b, sizeof b);
    std::string id = fmt::format("{:02x}{:02x}{:02x}{:02x}", b[0], b[1], b[2], b[3]);
    if (!runs_.count(id)) return id;
  }
}

api::RunInfo Workspace::submit(const api::SubmitRequest& req, const Principal& who) {
  if (who.is_node() || who.user.empty())
    throw HttpError(403, "PERMISSION_DENIED", "a node token may not submit runs");
  if (auto why = isolation_refusal(opts_.isolation, who.user, identity_->bootstrap_admin(), identity_->users().size()))
    throw HttpError(409, "SANDBOX_UNAVAILABLE", *why);
  ParseOptions po;
  po.check_paths = false;  // the paths are on the submitter's machine; the snapshot carries the files
  ParseResult parsed = parse_workload_text(req.workload_yaml, req.file_name.empty() ? "workload.yaml" : req.file_name,
                                           req.base_dir.empty() ? "." : req.base_dir, po);
  if (!parsed.ok())
    throw HttpError(400, "INVALID_WORKLOAD",
                    fmt::format("the workspace rejected {}", req.file_name.empty() ? "the workload" : req.file_name),
                    parsed.diagnostics);
  const Workload& w = *parsed.workload;
  std::vector<api::RunPermission> grants;
  for (size_t k = 0; k < w.permissions.size(); ++k) {
    const auto& p = w.permissions[k];
    api::RunPermission g;
    g.permission_level = p.level;
    if (p.principal_kind == "group_name") {
      g.group_name = p.principal;
      if (p.principal != kUsersGroup && !identity_->group(p.principal))
        throw HttpError(400, "INVALID_PARAMETER_VALUE",
                        fmt::format("permissions[{}]: group '{}' does not exist in this workspace", k, p.principal));
    } else {
      (p.principal_kind == "user_name" ? g.user_name : g.service_principal_name) = p.principal;
      if (!identity_->user(p.principal))
        throw HttpError(400, "INVALID_PARAMETER_VALUE",
                        fmt::format("permissions[{}]: user '{}' does not exist in this workspace", k, p.principal));
    }
    grants.push_back(g);
  }
  // The owner must be able to READ every scope the run's nodes will read (checked again at each fetch).
  if (!who.admin)
    for (const auto& sr : w.secrets) {
      if (!services_->secrets().exists({sr.scope, sr.key})) continue;  // reported below as missing
      std::string have = services_->secrets().permission(sr.scope, acl_principals(who));
      if (auto why = secret_refusal(who.user, sr.scope, have, "READ"))
        throw HttpError(403, "PERMISSION_DENIED", fmt::format("secret {}/{} (as {}): {}", sr.scope, sr.key, sr.name, *why));
    }
  if (auto missing = services_->missing_secrets(w, req.file_name); !missing.empty())
    throw HttpError(400, "SECRETS_MISSING",
                    fmt::format("{} secret(s) the workload references do not exist in this workspace", missing.size()),
                    missing);
  // The owner must be able to READ every volume the workload names (the node mount and the node token
  // follow the same rule); a volume that does not exist yet becomes the submitter's.
  std::vector<std::string> volume_keys = workload_volume_keys(w);
  std::vector<std::string> new_volumes = check_run_volumes(volume_keys, who);
  // With code_source remote_volume the snapshot lives in that volume (air run put it there), not in the
  // workspace's snapshot store.
  std::string snapshot_path;
  uint64_t snapshot_bytes = 0;
  if (!req.snapshot_digest.empty() && w.code_source && !w.code_source->remote_volume.empty()) {
    VolumePath vp = volume_snapshot_path(w.code_source->remote_volume, req.snapshot_digest);
    auto meta = volumes_.stat(vp);
    if (!meta || meta->is_directory)
      throw HttpError(400, "SNAPSHOT_MISSING", "snapshot " + req.snapshot_digest.substr(0, 12) +
                                                   " is not in the volume: " + vp.str() + " does not exist");
    snapshot_path = vp.str();
    snapshot_bytes = meta->size;
  } else if (!req.snapshot_digest.empty()) {
    // A digest the submitter may not read is answered as one that was never uploaded: naming it is no
    // way in, and the answer tells nothing of whether it exists.
    if (!blobs_.has(req.snapshot_digest) || snapshot_refusal(who, req.snapshot_digest))
      throw HttpError(400, "SNAPSHOT_MISSING", "snapshot " + req.snapshot_digest + " has not been uploaded");
    snapshot_bytes = blobs_.size(req.snapshot_digest);
  }
  std::vector<std::string> notices;
  std::string pool = pool_for(w.compute.pool_id, notices);
  if (auto it = pool_gpus_.find(pool);
      w.compute.gpu && it != pool_gpus_.end() && w.compute.nodes * w.compute.accelerators_per_node > it->second.second)
    throw HttpError(400, "INSUFFICIENT_RESOURCES",
                    fmt::format("{} x {} needs {} GPUs on {} node(s), but {} has {}", w.compute.num_accelerators,
                                w.compute.accelerator_type, w.compute.nodes * w.compute.accelerators_per_node,
                                w.compute.nodes,
                                opts_.pools.empty() ? "this workspace's machine" : "pool '" + pool + "'",
                                it->second.second));
  for (const auto& key : new_volumes) {  // the submitter's now, unless another user made it meanwhile
    VolumeRecord rec = create_volume_record(key, who.user);
    if (auto why = volume_refusal(who, volume_full_name(key), rec.owner, volume_granted(who, key), kReadVolume))
      throw HttpError(403, "PERMISSION_DENIED",
                      fmt::format("the workload names /Volumes/{}, which its owner may not read: {}", key, *why));
  }

  std::lock_guard<std::mutex> g(mu_);
  std::string key = req.idempotency_key.empty() ? w.idempotency_token : req.idempotency_key;
  if (!key.empty()) {
    if (auto it = idempotency_.find(key); it != idempotency_.end()) {
      const auto& earlier = runs_.at(it->second).info;
      if (earlier.user != who.user)
        throw HttpError(409, "RESOURCE_CONFLICT", "this idempotency key was used by another user's run; choose another");
      return earlier;
    }
  }
  RunRecord r;
  r.seq = ++seq_;
  auto& i = r.info;
  i.run_id = new_run_id();
  i.user = who.user;
  i.permissions = grants;
  i.experiment_name = w.experiment_name;
  i.state = "PENDING";
  i.status_message = "queued";
  i.pool_id = pool;
  i.priority_class = w.priority_class;
  i.accelerator_type = w.compute.accelerator_type;
  i.num_accelerators = w.compute.num_accelerators;
  i.accelerators_per_node = w.compute.accelerators_per_node;
  i.num_nodes = std::max(1, w.compute.nodes);
  i.gpu = w.compute.gpu;
  i.max_retries = w.max_retries;
  i.timeout_minutes = w.timeout_minutes;
  i.stall_timeout_minutes = w.stall_timeout_minutes;
  i.straggler_minutes = w.straggler_minutes;
  i.submitted_at_ms = now();
  i.snapshot_digest = req.snapshot_digest;
  i.snapshot_bytes = snapshot_bytes;
  i.file_name = req.file_name;
  i.workload_yaml = req.workload_yaml;
  i.idempotency_key = key;
  json env = json::array();
  for (const auto& [k, v] : w.env_variables) env.push_back({k, v});
  json secrets = json::array();
  for (const auto& sr : w.secrets) secrets.push_back({{"name", sr.name}, {"scope", sr.scope}, {"key", sr.key}});
  r.spec_json = json{{"command", w.command},
                     {"env", env},
                     {"parameters_yaml", w.parameters_yaml},
                     {"local_world_size", std::max(1, w.compute.accelerators_per_node)},
                     {"gpu", w.compute.gpu},
                     {"secrets", secrets},
                     {"dependencies", w.environment.dependencies},
                     {"environment_version", w.environment.version.value_or("")},
                     {"mlflow_run_name", w.mlflow_run_name},
                     {"system_metrics_interval_s", w.system_metrics_interval},
                     {"step_pattern", w.step_pattern},
                     {"snapshot_path", snapshot_path}}
                    .dump();
  if (!key.empty()) idempotency_[key] = i.run_id;
  std::string id = i.run_id;
  runs_[id] = std::move(r);
  active_.insert(id);
  RunRecord& stored = runs_[id];
  save(stored);
  schedule();  // the new run takes its place in the queue; it starts now only if the policy says so
  api::RunInfo reply = stored.info;
  reply.notices = notices;
  // Nodes on this machine without a sandbox see the volumes at AIR_VOLUMES_ROOT: said once, here.
  if (opts_.isolation.probed && !opts_.isolation.sandbox && !named_volume_paths(stored.spec_json).empty())
    reply.notices.push_back(volumes_fallback_notice(opts_.isolation.why_not, volumes_.root()));
  return reply;
}

void Workspace::check_node(const RunRecord& r, int attempt, int node) const {
  for (const auto& a : r.info.attempts)
    if (a.number == attempt) {
      if (node < 0 || node >= static_cast<int>(a.nodes.size()))
        throw not_found(fmt::format("run {} attempt {} has no node {}", r.info.run_id, attempt, node));
      return;
    }
  throw not_found(fmt::format("run {} has no attempt {}", r.info.run_id, attempt));
}

api::RunInfo Workspace::get(const std::string& id) const {
  api::RunInfo info;
  std::string spec;
  {
    std::lock_guard<std::mutex> g(mu_);
    info = find(id).info;
    spec = find(id).spec_json;
  }
  services_->add_metrics(info);  // outside the lock: a read of the MLflow tables
  for (auto& a : info.attempts)    // each node's stored log size (the run page shows it)
    for (auto& n : a.nodes) {
      std::error_code ec;
      auto bytes = std::filesystem::file_size(logs_.path({id, a.number, n.rank}), ec);
      n.log_bytes = ec ? 0 : static_cast<uint64_t>(bytes);
    }
  for (const auto& path : named_volume_paths(spec)) {
    auto u = volumes_.usage(parse_volume_path(path));
    info.volumes.push_back({path, u.files, u.bytes, u.exists});
  }
  return info;
}

api::RunList Workspace::list(int limit, bool all_status, const Principal& who, bool all_users) const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<const RunRecord*> rs;
  for (const auto& [id, r] : runs_) {
    auto st = run_state_from_string(r.info.state).value_or(RunState::kFailed);
    if (!all_status && is_terminal(st)) continue;
    if (all_users ? run_level(who, r.info.user, r.info.permissions) >= RunLevel::kCanView : r.info.user == who.user)
      rs.push_back(&r);
  }
  std::sort(rs.begin(), rs.end(), [](auto* a, auto* b) { return a->seq > b->seq; });
  api::RunList out;
  for (auto* r : rs) {
    if (limit > 0 && static_cast<int>(out.runs.size()) >= limit) break;
    api::RunInfo i = r->info;
    i.workload_yaml.clear();
    for (auto& a : i.attempts) a.failing_lines.clear();
    out.runs.push_back(std::move(i));
  }
  return out;
}

api::CancelReply Workspace::cancel(const std::string& id) {
  std::lock_guard<std::mutex> g(mu_);
  RunRecord& r = find(id);
  auto st = run_state_from_string(r.info.state).value_or(RunState::kFailed);
  if (is_terminal(st)) return {id, r.info.state, true};
  if (waiting(r)) {
    r.info.state = "CANCELED";
    r.info.status_message = r.info.current_attempt ? "canceled while queued for its next attempt"
                                                   : "canceled before it started";
    r.stop_kind.clear();
    r.info.ended_at_ms = now();
    save(r);
    logs_.wake();
    return {id, r.info.state, false};
  }
  if (r.stop_kind != "cancel") begin_stop(r, "cancel", "canceled by request");
  return {id, r.info.state, false};
}

api::NodeSpec Workspace::node_spec(const std::string& id, int attempt, int node) const {
  std::lock_guard<std::mutex> g(mu_);
  const RunRecord& r = find(id);
  check_node(r, attempt, node);
  auto t = json::parse(r.spec_json);
  api::NodeSpec s;
  s.run_id = id;
  s.attempt = attempt;
  s.node_rank = node;
  s.num_nodes = r.info.num_nodes;
  s.local_world_size = t.value("local_world_size", 1);
  s.master_addr = "127.0.0.1";
  for (const auto& a : r.info.attempts)
    if (a.number == attempt) s.master_port = a.master_port;
  s.command = t.value("command", "");
  for (const auto& kv : t.value("env", json::array())) s.env.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  s.parameters_yaml = t.value("parameters_yaml", "");
  s.snapshot_digest = r.info.snapshot_digest;
  s.snapshot_path = t.value("snapshot_path", "");
  s.gpu = t.value("gpu", false);
  s.max_log_bytes = 64ull << 30;
  s.max_unpack_bytes = opts_.max_unpack_bytes;
  s.max_unpack_entries = opts_.max_unpack_entries;
  for (const auto& x : t.value("secrets", json::array()))
    s.secrets.push_back({x.value("name", ""), x.value("scope", ""), x.value("key", "")});
  s.dependencies = t.value("dependencies", std::vector<std::string>{});
  s.environment_version = t.value("environment_version", "");
  s.system_metrics_interval_s = t.value("system_metrics_interval_s", 10.0);
  s.step_pattern = t.value("step_pattern", "");
  for (const auto& a : r.info.attempts)
    if (a.number == attempt) s.mlflow_run_id = a.mlflow_run_id;
  s.volumes_root = volumes_.root();
  node_volumes(r.info.user, r.spec_json, s);
  return s;
}

}  // namespace air::server
