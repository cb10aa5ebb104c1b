// The façade (workspace.h): builds and wires the parts, starts and stops the tick thread, and keeps the
// run-table requests that are not an attempt's: submit (admission's steps, then the run table and the
// queue), get, list, who may see a run.
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
#include "server/workspace/admission.h"
#include "server/workspace/services.h"

namespace air::server {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

HttpError not_found(const std::string& what) { return HttpError(404, "NOT_FOUND", what); }

}  // namespace

Workspace::Workspace(WorkspaceOptions opts, std::unique_ptr<Backend> backend)
    : opts_(std::move(opts)),
      backend_(std::move(backend)),
      store_((fs::create_directories(opts_.home), opts_.home + "/workspace.db")),
      volumes_(opts_.volumes_root.empty() ? opts_.home + "/volumes" : opts_.volumes_root),
      logs_(opts_.home + "/runs"),
      services_(std::make_unique<WorkspaceServices>(opts_.home + "/workspace.db")),
      identity_(std::make_unique<IdentityStore>(opts_.home + "/workspace.db", opts_.admin_user)),
      snapshots_(std::make_unique<Snapshots>(opts_.home + "/blobs", opts_.home + "/workspace.db",
                                             [this](const Principal& who, const std::string& digest) {
                                               return snapshot_run_refusal(who, digest);
                                             })) {
  if (!opts_.now_ms) opts_.now_ms = system_now_ms;
  auto clock = [this] { return now(); };
  volume_access_ = std::make_unique<VolumeAccess>(opts_.home + "/workspace.db", volumes_, *identity_, clock);
  // A node token acts for its run's owner: the run table says who that is (under the run lock; Auth calls
  // this without its own lock held, so the two locks never nest).
  auth_ = std::make_unique<Auth>(store_, *identity_, clock, [this](const std::string& run_id) -> std::optional<std::string> {
    std::lock_guard<std::mutex> g(runs_.mu());
    if (const RunRecord* r = runs_.get(run_id)) return r->info.user;
    return std::nullopt;
  });
  volume_access_->adopt_volume_folders();  // volumes from before owners existed are the bootstrap admin's
  queue_ = std::make_unique<Queue>(opts_, backend_->total_gpus(), runs_, clock);
  std::vector<std::string> pools;  // the names a quota may take: the configured pools, else the one pool
  for (const auto& p : opts_.pools) pools.push_back(p.name);
  if (pools.empty() && backend_->total_gpus() >= 0) pools.push_back("default");
  fairness_ = std::make_unique<Fairness>(opts_.home + "/workspace.db", opts_.fair, *identity_, clock, std::move(pools));
  queue_->set_fairness(fairness_.get());
  lifecycle_ = std::make_unique<Lifecycle>(Lifecycle::Parts{opts_, *backend_, store_, logs_, runs_, *queue_, *auth_,
                                                            *services_, *volume_access_, volumes_, *identity_});
}

Workspace::~Workspace() { stop(); }

void Workspace::set_url(const std::string& url) { lifecycle_->set_url(url); }

void Workspace::tick() {
  prune_audit();
  lifecycle_->tick();
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
    std::lock_guard<std::mutex> g(runs_.mu());
    // Bootstrap admin tokens of workspaces from before it was a listed user token (one kept per start, never
    // revoked): deleted; create_admin_token makes the one token of this start. Node tokens are reloaded.
    auth_->load();
    seq_ = store_.max_seq();
    for (auto& r : store_.load_runs()) {
      if (r.info.user.empty()) r.info.user = identity_->bootstrap_admin();  // runs from before users existed
      services_->add_metrics(r.info, false);  // the attempts' MLflow run ids live in the MLflow tables
      runs_.add(std::move(r));
    }
    lifecycle_->load();      // running attempts keep their GPUs and get a window to re-attach
    lifecycle_->schedule();  // the queue as it was: places from the stored submit times, before the first request
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

Workspace::RunAccess Workspace::run_access(const std::string& run_id) const {
  std::lock_guard<std::mutex> g(runs_.mu());
  const RunRecord& r = runs_.find(run_id);
  return {r.info.user, r.info.permissions};
}

std::optional<std::string> Workspace::snapshot_run_refusal(const Principal& who, const std::string& digest) const {
  std::lock_guard<std::mutex> g(runs_.mu());
  if (who.is_node()) {
    const RunRecord* r = runs_.get(who.run_id);
    if (r != nullptr && r->info.snapshot_digest == digest) return std::nullopt;
    return fmt::format("a node token may read only its own run's snapshot; run {} was not made from snapshot {}",
                       who.run_id, digest);
  }
  for (const auto& [id, r] : runs_.all())
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

std::string Workspace::new_run_id() const {
  for (;;) {
    unsigned char b[4];
    RAND_bytes(b, sizeof b);
    std::string id = fmt::format("{:02x}{:02x}{:02x}{:02x}", b[0], b[1], b[2], b[3]);
    if (!runs_.contains(id)) return id;
  }
}

api::RunInfo Workspace::submit(const api::SubmitRequest& req, const Principal& who) {
  // Admission's steps (admission.h), in order: the first that refuses answers.
  admission::check_submitter(who, opts_.isolation, *identity_);
  const Workload w = admission::parse(req);
  std::vector<api::RunPermission> grants = admission::resolve_permissions(w, *identity_);
  admission::check_secrets(w, who, *services_, req.file_name);
  // The owner must be able to READ every volume the workload names (the node mount and the node token
  // follow the same rule); a volume that does not exist yet becomes the submitter's.
  std::vector<std::string> new_volumes = volume_access_->check_run_volumes(workload_volume_keys(w), who);
  admission::Snapshot snapshot = admission::check_snapshot(
      req, w, volumes_, snapshots_->blobs(), [&] { return !snapshots_->refusal(who, req.snapshot_digest); });
  std::vector<std::string> notices;
  std::string pool = queue_->pool_for(w.compute.pool_id, notices);
  admission::check_fits_pool(w, pool, queue_->pool_gpus(pool), queue_->configured_pools());
  for (const auto& key : new_volumes) {  // the submitter's now, unless another user made it meanwhile
    VolumeRecord rec = volume_access_->create_volume_record(key, who.user);
    if (auto why = volume_refusal(who, volume_full_name(key), rec.owner, volume_access_->volume_granted(who, key), kReadVolume))
      throw HttpError(403, "PERMISSION_DENIED",
                      fmt::format("the workload names /Volumes/{}, which its owner may not read: {}", key, *why));
  }
  const RunSpec spec = admission::run_spec(w, snapshot);

  std::lock_guard<std::mutex> g(runs_.mu());
  std::string key = req.idempotency_key.empty() ? w.idempotency_token : req.idempotency_key;
  if (!key.empty()) {
    if (const RunRecord* e = runs_.by_idempotency_key(key)) {
      const auto& earlier = e->info;
      if (earlier.user != who.user)
        throw HttpError(409, "RESOURCE_CONFLICT", "this idempotency key was used by another user's run; choose another");
      return earlier;
    }
  }
  // Quotas (docs/scheduler.md): a run larger than its owner's quota, or past a full queued-runs quota.
  if (std::string why = queue_->quota_refusal(who.user, pool, w.compute.gpu ? w.compute.num_accelerators : 0);
      !why.empty())
    throw HttpError(400, "QUOTA_EXCEEDED", why + "; nothing was submitted");
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
  i.snapshot_bytes = snapshot.bytes;
  i.file_name = req.file_name;
  i.workload_yaml = req.workload_yaml;
  i.idempotency_key = key;
  r.spec_json = spec.to_json();
  RunRecord& stored = runs_.add(std::move(r));  // its idempotency key too
  store_.save_run(stored);
  lifecycle_->schedule();  // the new run takes its place in the queue; it starts now only if the policy says so
  api::RunInfo reply = stored.info;
  reply.notices = notices;
  // Nodes on this machine without a sandbox see the volumes at AIR_VOLUMES_ROOT: said once, here.
  if (opts_.isolation.probed && !opts_.isolation.sandbox && !spec.named_volume_paths().empty())
    reply.notices.push_back(volumes_fallback_notice(opts_.isolation.why_not, volumes_.root()));
  return reply;
}

api::RunInfo Workspace::get(const std::string& id) const {
  api::RunInfo info;
  std::string spec;
  {
    std::lock_guard<std::mutex> g(runs_.mu());
    const RunRecord& r = runs_.find(id);
    info = r.info;
    spec = r.spec_json;
  }
  services_->add_metrics(info);  // outside the lock: a read of the MLflow tables
  for (auto& a : info.attempts)    // each node's stored log size (the run page shows it)
    for (auto& n : a.nodes) {
      std::error_code ec;
      auto bytes = std::filesystem::file_size(logs_.path({id, a.number, n.rank}), ec);
      n.log_bytes = ec ? 0 : static_cast<uint64_t>(bytes);
    }
  for (const auto& path : RunSpec::parse(spec).named_volume_paths()) {
    auto u = volumes_.usage(parse_volume_path(path));
    info.volumes.push_back({path, u.files, u.bytes, u.exists});
  }
  return info;
}

api::RunList Workspace::list(int limit, bool all_status, const Principal& who, bool all_users) const {
  std::lock_guard<std::mutex> g(runs_.mu());
  std::vector<const RunRecord*> rs;
  for (const auto& [id, r] : runs_.all()) {
    if (!all_status && over(r.info)) continue;
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

}  // namespace air::server
