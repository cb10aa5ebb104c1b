// `air run` after validation: snapshot upload, submit, and --watch.
#include "cli/run/submit.h"
#include "cli/run/watch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "cli/runs/log_stream.h"
#include "cli/output.h"
#include "cli/format.h"
#include "cli/remote.h"
#include "core/wire/api.h"
#include "core/base/diagnostics.h"
#include "cli/run/volume_check.h"
#include "core/snapshot/git.h"
#include "core/snapshot/snapshot.h"
#include "core/volumes/path.h"

namespace air::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string mb(uint64_t bytes) { return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6); }

uint64_t snapshot_limit_bytes() {
  if (const char* v = std::getenv("AIR_MAX_SNAPSHOT_MB"); v && *v) return std::strtoull(v, nullptr, 10) << 20;
  return 1024ull << 20;
}

struct UploadResult {
  std::string digest;
  uint64_t bytes = 0, uploaded = 0, files = 0;
  bool adopted = false;  // the local workspace linked the cached archive: nothing was sent
};

bool env_is(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return v && value == v;
}

// Whether the workspace is on this machine (an http:// URL to a loopback address): only then can it share
// this home's snapshot cache. AIR_SNAPSHOT_ADOPT=0 uploads anyway (bench/cold_submit.sh compares the two).
bool loopback_workspace(const std::string& url) {
  std::string_view u = url;
  if (u.substr(0, 7) != "http://") return false;
  u.remove_prefix(7);
  std::string_view host = u.substr(0, u.find('/'));
  if (host.substr(0, 5) == "[::1]") return true;
  host = host.substr(0, host.rfind(':'));
  return host == "localhost" || host.substr(0, 4) == "127.";
}

UploadResult upload_snapshot(const Workload& w, Client& c, Context& ctx) {
  UploadResult u;
  if (!w.code_source || w.code_source->type != "snapshot" || w.code_source->root_path_resolved.empty()) return u;
  const CodeSource& cs = *w.code_source;
  std::string source;
  SnapshotManifest m = workload_snapshot(cs, &source);
  if (ctx.global.output == "text" && cs.git) *ctx.err << "  snapshot source: " << source << "\n";
  u.files = m.files.size();
  uint64_t limit = snapshot_limit_bytes();
  if (m.total_bytes > limit) {
    std::string largest;
    for (size_t i = 0; i < m.largest.size() && i < 5; ++i)
      largest += fmt::format("\n    {} ({})", m.largest[i].path, mb(m.largest[i].size));
    throw Error(fmt::format("the snapshot of {} is {}, over the limit of {}; largest files:{}", cs.root_path_resolved,
                            mb(m.total_bytes), mb(limit), largest),
                "exclude them with a pattern per line in " + cs.root_path_resolved +
                    "/.airignore (or .gitignore), or raise the limit with AIR_MAX_SNAPSHOT_MB");
  }
  // The cache makes an unchanged tree cost a scan only: no file is read, no archive written.
  SnapshotArchive a = snapshot_with_cache(m, air_home() + "/cache/snapshots");
  u.digest = a.sha256;
  u.bytes = a.bytes;
  // The workspace's snapshot store, or (code_source remote_volume) <remote_volume>/.internal/ through the Files
  // API; either way named by content, so an unchanged tree is not sent again.
  std::string path = std::string(api::kPrefix) + "/snapshots/" + a.sha256;
  if (!cs.remote_volume.empty()) {
    VolumePath vp = volume_snapshot_path(cs.remote_volume, a.sha256);
    if (c.head(files_api_url(vp))) return u;
    path = files_api_url(vp) + "?overwrite=true";
    if (ctx.global.output == "text") *ctx.err << "  snapshot store: " << vp.str() << "\n";
  } else if (c.head(path)) {
    return u;
  } else if (loopback_workspace(c.base_url()) && !env_is("AIR_SNAPSHOT_ADOPT", "0")) {
    // A workspace on this home (the local one) links the archive just written instead of receiving a copy
    // (POST .../adopt, server/api/snapshots.cc); any refusal (another home or user, an older workspace):
    // upload it.
    HttpResponse r = c.request("POST", path + "/adopt");
    if (r.status / 100 == 2) {
      u.adopted = true;
      return u;
    }
  }
  bool show = ctx.global.output == "text" && stderr_is_tty();
  ProgressFn progress;
  if (show)
    progress = [&ctx, last = uint64_t(0)](uint64_t done, uint64_t total) mutable {
      if (total == 0 || (done != total && done - last < (1u << 20))) return;
      last = done;
      *ctx.err << fmt::format("\r  uploading snapshot: {:3d}% ({} of {})", static_cast<int>(done * 100 / total),
                              mb(done), mb(total))
               << std::flush;
    };
  c.put_file(path, a.path, progress);
  if (show) *ctx.err << "\n";
  u.uploaded = a.bytes;
  return u;
}

}  // namespace

SnapshotManifest workload_snapshot(const CodeSource& cs, std::string* source) {
  if (!cs.git) {
    SnapshotManifest m = scan_snapshot(cs.root_path_resolved, cs.include_paths);
    exclude_subtree(m, air_home(), "$AIR_HOME");
    *source = "the working tree of " + cs.root_path_resolved + " (.gitignore and .airignore rules apply)";
    return m;
  }
  GitSnapshotSource g = export_git_snapshot(cs.root_path_resolved, cs.git->branch, cs.git->commit, cs.include_paths,
                                            air_home() + "/cache/git");
  *source = fmt::format("git {} {} = commit {} (its tracked files; the working tree is not read)", g.mode, g.ref,
                        g.commit);
  return manifest_of_export(g, cs.include_paths);
}

int submit_workload(const Workload& w, const RunOptions& opts, Context& ctx) {
  // Secrets are checked by the workspace at submit (by name): a missing one comes back as a diagnostic.
  Session s = connect(ctx);
  bool text = ctx.global.output == "text";
  if (text) *ctx.err << "Submitting experiment: " << w.experiment_name << "\n";
  for (const auto& warning : foreign_volume_warnings(w, *s.client)) *ctx.err << "air: warning: " << warning << "\n";
  UploadResult up = upload_snapshot(w, *s.client, ctx);
  if (text && !up.digest.empty())
    *ctx.err << fmt::format("  snapshot {} ({} files, {}): {}\n", up.digest.substr(0, 12), up.files, mb(up.bytes),
                            up.uploaded  ? "uploaded " + mb(up.uploaded)
                            : up.adopted ? "handed to the local workspace (not copied)"
                                         : "already in the workspace");
  api::SubmitRequest req;
  req.workload_yaml = w.source_text;
  req.file_name = w.source_file;
  req.base_dir = fs::absolute(fs::path(w.source_file)).parent_path().string();
  req.snapshot_digest = up.digest;
  req.snapshot_bytes = up.bytes;
  req.idempotency_key = opts.idempotency_key;
  api::RunInfo run;
  try {
    run = s.client->post_json(std::string(api::kPrefix) + "/runs", req).get<api::RunInfo>();
  } catch (const ApiError& e) {
    if (e.diagnostics().empty()) throw;
    *ctx.err << render_all(e.diagnostics(), w.source_file, "nothing was submitted");
    return kExitUsage;
  }
  for (const auto& n : run.notices) *ctx.err << "air: note: " << n << "\n";  // e.g. no private /Volumes here
  std::string dashboard = web_url(s.target.url, run.run_id);
  if (!text) {
    // The reference: the envelope {status: PENDING, run_id, dashboard_url}; with --watch a SUBMITTED line first
    // of a JSON-lines stream. Our snapshot and workspace fields ride along.
    json d{{"status", run.state},           {"run_id", run.run_id},
           {"dashboard_url", dashboard},    {"snapshot_digest", up.digest},
           {"snapshot_uploaded_bytes", up.uploaded}, {"snapshot_adopted", up.adopted}, {"workspace", s.target.url}};
    if (opts.watch) {
      d["type"] = "SUBMITTED";
      d["ts"] = rfc3339_now();
      print_json_line(ctx, d);
    } else {
      print_json(ctx, d);
    }
  } else {
    *ctx.out << "Submitted workload with Job Run ID: " << run.run_id << "\n"
             << "View job run at: " << dashboard << "\n";
    *ctx.err << "  " << run.num_nodes << " node(s) of " << run.accelerator_type << " in the " << s.target.source << "\n";
    if (!opts.watch)
      *ctx.err << "\nTip: use --watch to stream logs until the run completes.\n  follow it: air logs " << run.run_id
               << "\n  status:    air get " << run.run_id << "\n";
  }
  ctx.out->flush();
  if (!opts.watch) return kExitOk;
  return watch_run(*s.client, run.run_id, ctx);
}

}  // namespace air::cli
