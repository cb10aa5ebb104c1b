// The submit checks (server/workspace/admission.h).
#include "server/workspace/admission.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/volumes/path.h"
#include "server/workspace/errors.h"

namespace air::server::admission {

void check_submitter(const Principal& who, const Isolation& isolation, const IdentityStore& identity) {
  if (who.is_node() || who.user.empty())
    throw HttpError(403, "PERMISSION_DENIED", "a node token may not submit runs");
  if (auto why = isolation_refusal(isolation, who.user, identity.bootstrap_admin(), identity.users().size()))
    throw HttpError(409, "SANDBOX_UNAVAILABLE", *why);
}

Workload parse(const api::SubmitRequest& req) {
  ParseOptions po;
  po.check_paths = false;  // the paths are on the submitter's machine; the snapshot carries the files
  ParseResult parsed = parse_workload_text(req.workload_yaml, req.file_name.empty() ? "workload.yaml" : req.file_name,
                                           req.base_dir.empty() ? "." : req.base_dir, po);
  if (!parsed.ok())
    throw HttpError(400, "INVALID_WORKLOAD",
                    fmt::format("the workspace rejected {}", req.file_name.empty() ? "the workload" : req.file_name),
                    parsed.diagnostics);
  return std::move(*parsed.workload);
}

std::vector<api::RunPermission> resolve_permissions(const Workload& w, const IdentityStore& identity) {
  std::vector<api::RunPermission> grants;
  for (size_t k = 0; k < w.permissions.size(); ++k) {
    const auto& p = w.permissions[k];
    api::RunPermission g;
    g.permission_level = p.level;
    if (p.principal_kind == "group_name") {
      g.group_name = p.principal;
      if (p.principal != kUsersGroup && !identity.group(p.principal))
        throw HttpError(400, "INVALID_PARAMETER_VALUE",
                        fmt::format("permissions[{}]: group '{}' does not exist in this workspace", k, p.principal));
    } else {
      (p.principal_kind == "user_name" ? g.user_name : g.service_principal_name) = p.principal;
      if (!identity.user(p.principal))
        throw HttpError(400, "INVALID_PARAMETER_VALUE",
                        fmt::format("permissions[{}]: user '{}' does not exist in this workspace", k, p.principal));
    }
    grants.push_back(g);
  }
  return grants;
}

void check_secrets(const Workload& w, const Principal& who, WorkspaceServices& services, const std::string& file_name) {
  // The owner must be able to READ every scope the run's nodes will read (checked again at each fetch).
  if (!who.admin)
    for (const auto& sr : w.secrets) {
      if (!services.secrets().exists({sr.scope, sr.key})) continue;  // reported below as missing
      std::string have = services.secrets().permission(sr.scope, acl_principals(who));
      if (auto why = secret_refusal(who.user, sr.scope, have, "READ"))
        throw HttpError(403, "PERMISSION_DENIED", fmt::format("secret {}/{} (as {}): {}", sr.scope, sr.key, sr.name, *why));
    }
  if (auto missing = services.missing_secrets(w, file_name); !missing.empty())
    throw HttpError(400, "SECRETS_MISSING",
                    fmt::format("{} secret(s) the workload references do not exist in this workspace", missing.size()),
                    missing);
}

Snapshot check_snapshot(const api::SubmitRequest& req, const Workload& w, const VolumeStore& volumes,
                        const BlobStore& blobs, const std::function<bool()>& may_read) {
  Snapshot s;
  if (req.snapshot_digest.empty()) return s;
  // With code_source remote_volume the snapshot lives in that volume (air run put it there), not in the
  // workspace's snapshot store.
  if (w.code_source && !w.code_source->remote_volume.empty()) {
    VolumePath vp = volume_snapshot_path(w.code_source->remote_volume, req.snapshot_digest);
    auto meta = volumes.stat(vp);
    if (!meta || meta->is_directory)
      throw HttpError(400, "SNAPSHOT_MISSING", "snapshot " + req.snapshot_digest.substr(0, 12) +
                                                   " is not in the volume: " + vp.str() + " does not exist");
    s.path = vp.str();
    s.bytes = meta->size;
    return s;
  }
  // A digest the submitter may not read is answered as one that was never uploaded: naming it is no way in,
  // and the answer tells nothing of whether it exists.
  if (!blobs.has(req.snapshot_digest) || !may_read())
    throw HttpError(400, "SNAPSHOT_MISSING", "snapshot " + req.snapshot_digest + " has not been uploaded");
  s.bytes = blobs.size(req.snapshot_digest);
  return s;
}

void check_fits_pool(const Workload& w, const std::string& pool, std::optional<int> pool_gpus, bool pools_configured) {
  int need = w.compute.nodes * w.compute.accelerators_per_node;
  if (w.compute.gpu && pool_gpus && need > *pool_gpus)
    throw HttpError(400, "INSUFFICIENT_RESOURCES",
                    fmt::format("{} x {} needs {} GPUs on {} node(s), but {} has {}", w.compute.num_accelerators,
                                w.compute.accelerator_type, need, w.compute.nodes,
                                pools_configured ? "pool '" + pool + "'" : "this workspace's machine", *pool_gpus));
}

RunSpec run_spec(const Workload& w, const Snapshot& snapshot) {
  RunSpec s;
  s.node.command = w.command;
  for (const auto& [k, v] : w.env_variables) s.node.env.emplace_back(k, v);
  s.node.parameters_yaml = w.parameters_yaml;
  s.node.local_world_size = std::max(1, w.compute.accelerators_per_node);
  s.node.gpu = w.compute.gpu;
  for (const auto& sr : w.secrets) s.node.secrets.push_back({sr.name, sr.scope, sr.key});
  s.node.dependencies = w.environment.dependencies;
  s.node.environment_version = w.environment.version.value_or("");
  s.node.snapshot_path = snapshot.path;
  s.node.system_metrics_interval_s = w.system_metrics_interval;
  s.node.step_pattern = w.step_pattern;
  s.mlflow_run_name = w.mlflow_run_name;
  s.usage_policy_name = w.usage_policy_name;
  return s;
}

}  // namespace air::server::admission
