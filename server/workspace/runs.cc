// Runs (runs.h): submit through admission's steps, get, list, who may see a run.
#include "server/workspace/runs.h"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "core/sandbox/sandbox.h"
#include "core/volumes/workload_volumes.h"
#include "core/workload/workload.h"
#include "server/store/identity.h"
#include "server/store/logs.h"
#include "server/store/store.h"
#include "server/store/volumes.h"
#include "server/workspace/admission.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"
#include "server/workspace/lifecycle.h"
#include "server/workspace/options.h"
#include "server/workspace/queue.h"
#include "server/workspace/run_table.h"
#include "server/workspace/run_spec.h"
#include "server/workspace/services.h"
#include "server/workspace/snapshots.h"
#include "server/workspace/volume_access.h"

namespace air::server {

Runs::Runs(Parts p)
    : opts_(p.opts),
      store_(p.store),
      runs_(p.runs),
      queue_(p.queue),
      lifecycle_(p.lifecycle),
      auth_(p.auth),
      identity_(p.identity),
      services_(p.services),
      volume_access_(p.volume_access),
      volumes_(p.volumes),
      logs_(p.logs),
      snapshots_(p.snapshots) {}

int64_t Runs::now() const { return opts_.now_ms(); }

api::RunInfo Runs::submit(const api::SubmitRequest& req) { return submit(req, auth_.bootstrap_principal()); }

api::RunList Runs::list(int limit, bool all_status) const {
  return list(limit, all_status, auth_.bootstrap_principal(), true);
}

api::CancelReply Runs::cancel(const std::string& run_id) { return lifecycle_.cancel(run_id); }

Runs::Access Runs::access(const std::string& run_id) const {
  std::lock_guard<std::mutex> g(runs_.mu());
  const RunRecord& r = runs_.find(run_id);
  return {r.info.user, r.info.permissions};
}

void Runs::require(const Principal& who, const std::string& run_id, RunLevel need) const {
  Access a = access(run_id);
  // A run the caller may not view is answered as one that does not exist (find()'s own words): no owner named.
  if (!who.is_node() && run_level(who, a.owner, a.grants) < RunLevel::kCanView) throw HttpError(404, "NOT_FOUND", "run " + run_id + " not found");
  if (auto why = run_refusal(who, run_id, a.owner, a.grants, need)) throw HttpError(403, "PERMISSION_DENIED", *why);
}

std::string Runs::new_run_id() const {
  for (;;) {
    unsigned char b[4];
    RAND_bytes(b, sizeof b);
    std::string id = fmt::format("{:02x}{:02x}{:02x}{:02x}", b[0], b[1], b[2], b[3]);
    if (!runs_.contains(id)) return id;
  }
}

api::RunInfo Runs::submit(const api::SubmitRequest& req, const Principal& who) {
  // Admission's steps (admission.h), in order: the first that refuses answers.
  admission::check_submitter(who, opts_.isolation, identity_);
  const Workload w = admission::parse(req);
  std::vector<api::RunPermission> grants = admission::resolve_permissions(w, identity_);
  admission::check_secrets(w, who, services_, req.file_name);
  // The owner must be able to READ every volume the workload names (the node mount and the node token
  // follow the same rule); a volume that does not exist yet becomes the submitter's.
  std::vector<std::string> new_volumes = volume_access_.check_run_volumes(workload_volume_keys(w), who);
  admission::Snapshot snapshot = admission::check_snapshot(
      req, w, volumes_, snapshots_.blobs(), [&] { return !snapshots_.refusal(who, req.snapshot_digest); });
  std::vector<std::string> notices;
  std::string pool = queue_.pool_for(w.compute.pool_id, notices);
  admission::check_fits_pool(w, pool, queue_.pool_gpus(pool), queue_.configured_pools());
  for (const auto& key : new_volumes) {  // the submitter's now, unless another user made it meanwhile
    VolumeRecord rec = volume_access_.create_volume_record(key, who.user);
    if (auto why = volume_refusal(who, volume_full_name(key), rec.owner, volume_access_.volume_granted(who, key), kReadVolume))
      throw HttpError(403, "PERMISSION_DENIED",
                      fmt::format("the workload names /Volumes/{}, which its owner may not read: {}", key, *why));
  }
  const RunSpec spec = admission::run_spec(w, snapshot);

  std::lock_guard<std::mutex> g(runs_.mu());
  std::string key = req.idempotency_key.empty() ? w.idempotency_token : req.idempotency_key;
  if (!key.empty()) {
    if (const RunRecord* e = runs_.by_idempotency_key(key)) {
      if (e->info.user != who.user)
        throw HttpError(409, "RESOURCE_CONFLICT", "this idempotency key was used by another user's run; choose another");
      return e->wire();
    }
  }
  // Quotas (docs/scheduler.md): a run larger than its owner's quota, or past a full queued-runs quota.
  if (std::string why = queue_.quota_refusal(who.user, pool, w.compute.gpu ? w.compute.num_accelerators : 0);
      !why.empty())
    throw HttpError(400, "QUOTA_EXCEEDED", why + "; nothing was submitted");
  RunRecord r;
  r.seq = ++seq_;
  auto& i = r.info;
  i.run_id = new_run_id();
  i.user = who.user;
  i.permissions = grants;
  i.experiment_name = w.experiment_name;
  set_state(r, RunState::kPending);
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
  lifecycle_.schedule();  // the new run takes its place in the queue; it starts now only if the policy says so
  api::RunInfo reply = stored.wire();
  reply.notices = notices;
  // Nodes on this machine without a sandbox see the volumes at AIR_VOLUMES_ROOT: said once, here.
  if (opts_.isolation.probed && !opts_.isolation.sandbox && !spec.named_volume_paths().empty())
    reply.notices.push_back(volumes_fallback_notice(opts_.isolation.why_not, volumes_.root()));
  return reply;
}

api::RunInfo Runs::get(const std::string& id) const {
  api::RunInfo info;
  std::string spec;
  {
    std::lock_guard<std::mutex> g(runs_.mu());
    const RunRecord& r = runs_.find(id);
    info = r.wire();
    spec = r.spec_json;
  }
  services_.add_metrics(info);  // outside the lock: a read of the MLflow tables
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

api::RunList Runs::list(int limit, bool all_status, const Principal& who, bool all_users) const {
  std::lock_guard<std::mutex> g(runs_.mu());
  std::vector<const RunRecord*> rs;
  for (const auto& [id, r] : runs_.all()) {
    if (!all_status && over(r)) continue;
    if (all_users ? run_level(who, r.info.user, r.info.permissions) >= RunLevel::kCanView : r.info.user == who.user)
      rs.push_back(&r);
  }
  std::sort(rs.begin(), rs.end(), [](auto* a, auto* b) { return a->seq > b->seq; });
  api::RunList out;
  for (auto* r : rs) {
    if (limit > 0 && static_cast<int>(out.runs.size()) >= limit) break;
    api::RunInfo i = r->wire();
    i.workload_yaml.clear();
    for (auto& a : i.attempts) a.failing_lines.clear();
    out.runs.push_back(std::move(i));
  }
  return out;
}

}  // namespace air::server
