// The façade (workspace.h): builds and wires the parts, loads the run table at start, runs the tick thread
// and prunes the audit log.
#include "server/workspace/workspace.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "server/workspace/services.h"

namespace air::server {

namespace fs = std::filesystem;

namespace {

int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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
  runs_part_ = std::make_unique<Runs>(Runs::Parts{opts_, store_, runs_, *queue_, *lifecycle_, *auth_, *identity_,
                                                  *services_, *volume_access_, volumes_, logs_, *snapshots_});
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
    runs_part_->loaded(store_.max_seq());
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

}  // namespace air::server
