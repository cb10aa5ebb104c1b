// The semantic rules for code_source (with root_path resolution and existence checks) and the run
// options (retries, timeout, tokens, MLflow names, permissions, usage policy).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "core/base/edit_distance.h"
#include "core/workload/decode.h"
#include "core/volumes/path.h"

namespace air {

namespace fs = std::filesystem;

namespace {

std::string expand_env(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '$' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    size_t start = i + 1, end;
    std::string name;
    if (s[start] == '{') {
      end = s.find('}', start);
      if (end == std::string::npos) {
        out += s.substr(i);
        break;
      }
      name = s.substr(start + 1, end - start - 1);
      i = end;
    } else {
      end = start;
      while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_')) ++end;
      if (end == start) {
        out += '$';
        continue;
      }
      name = s.substr(start, end - start);
      i = end - 1;
    }
    if (const char* v = std::getenv(name.c_str())) out += v;
  }
  return out;
}

}  // namespace

std::string resolve_root_path(const std::string& path, const std::string& base_dir) {
  std::string p = expand_env(trim(path));
  if (p == "~" || p.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    p = std::string(home ? home : "") + p.substr(1);
  }
  if (p.rfind("project_root/", 0) == 0) p = p.substr(13);
  else if (p == "project_root") p = ".";
  fs::path r(p);
  if (r.is_relative()) r = fs::path(base_dir.empty() ? "." : base_dir) / r;
  std::error_code ec;
  fs::path abs = fs::absolute(r, ec);
  if (ec) abs = r;
  std::string out = abs.lexically_normal().string();
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

void WorkloadDecoder::decode_code_source(Entry e, std::optional<CodeSource>& out) {
  if (!e) return;
  CodeSource cs;
  const YamlNode* m = e.value;
  if (Entry type = get(m, "type")) {
    cs.type = trim(*text(type));
    if (cs.type != "snapshot") {
      error(*type.value, fmt::format("'code_source.type' must be 'snapshot', found '{}'", cs.type),
            "write 'type: snapshot'");
    }
  }
  Entry snap = get(m, "snapshot");
  bool has_type = m->find("type") != nullptr, has_snap = m->find("snapshot") != nullptr;
  const YamlNode* flat = nullptr;  // the first key of the flat form, if any
  bool unknown = false;
  static const std::set<std::string> kKnown = {"type", "snapshot", "root_path", "include_paths", "remote_volume", "git"};
  for (const auto& entry : m->entries) unknown = unknown || !kKnown.count(entry.first.scalar);
  for (const auto& entry : m->entries)
    for (const char* k : {"root_path", "include_paths", "remote_volume", "git"})
      if (!flat && entry.first.scalar == k) flat = &entry.first;
  if (flat && (has_snap || has_type)) {
    error(*flat, fmt::format("'code_source.{}' is the flat form; this code_source also has '{}'", flat->scalar,
                             has_snap ? "snapshot" : "type"),
          "use either 'root_path: ...' directly under code_source, or 'type: snapshot' with 'snapshot: {root_path: ...}'");
  } else if (flat) {
    if (!get(m, "root_path")) error(*e.key, "missing required key 'root_path' in 'code_source'", "add 'root_path: .'");
  } else if ((!has_type || !has_snap) && !unknown) {  // a misspelt key already has its did-you-mean error
    error(*e.key, fmt::format("missing required key '{}' in 'code_source'", !has_type ? "type" : "snapshot"),
          !has_type ? "add 'type: snapshot' (or the flat form: 'root_path: .')" : "add 'snapshot: <object>'");
  }
  if (flat && !has_snap && !has_type) snap = e;  // the flat form's keys are the snapshot's
  if (snap) {
    const YamlNode* s = snap.value;
    check_root_path(get(s, "root_path"), cs);
    decode_include_paths(get(s, "include_paths"), cs);
    if (Entry vol = get(s, "remote_volume")) {
      cs.remote_volume = trim(*text(vol));
      if (cs.remote_volume.rfind("/Volumes/", 0) != 0) {
        error(*vol.value, fmt::format("'remote_volume' must start with '/Volumes/', found '{}'", cs.remote_volume),
              "for example /Volumes/main/default/snapshots");
      } else {
        // The snapshot goes to <remote_volume>/.internal/: the path must name a place inside a volume.
        try {
          volume_snapshot_path(cs.remote_volume, std::string(64, '0'));
        } catch (const FsError& err) {
          error(*vol.value, fmt::format("'remote_volume' is not a usable volume path: {}", err.what()),
                "for example /Volumes/main/default/snapshots (catalog, schema, volume)");
        }
      }
    }
    decode_git(get(s, "git"), cs);
  }
  if (cs.root_path_resolved.empty() && !cs.root_path.empty()) cs.root_path_resolved = resolve_root_path(cs.root_path, base_dir_);
  out = cs;
}

void WorkloadDecoder::check_root_path(Entry e, CodeSource& cs) {
  if (!e) return;
  cs.root_path = trim(*text(e));
  if (cs.root_path.empty()) {
    error_key(e, "'root_path' is empty", "use '.' for the folder of the YAML file");
    return;
  }
  cs.root_path_resolved = resolve_root_path(cs.root_path, base_dir_);
  if (!opts_.check_paths) return;
  std::error_code ec;
  auto st = fs::status(cs.root_path_resolved, ec);
  if (!fs::exists(st)) {
    error(*e.value, fmt::format("root_path does not exist: {}", cs.root_path_resolved),
          "relative paths are resolved against the YAML file's folder");
  } else if (!fs::is_directory(st)) {
    error(*e.value, fmt::format("root_path must be a directory: {}", cs.root_path_resolved));
  }
}

void WorkloadDecoder::decode_include_paths(Entry e, CodeSource& cs) {
  if (!e) return;
  if (e.value->items.empty()) {
    error_key(e, "'include_paths' is an empty list", "omit it to include everything, or list paths");
    return;
  }
  for (const auto& item : e.value->items) {
    if (bad_.count(&item) || !item.is_scalar()) continue;
    std::string p = trim(item.scalar);
    cs.include_paths.push_back(p);
    fs::path path(p);
    bool dotdot = std::any_of(path.begin(), path.end(), [](const fs::path& part) { return part == ".."; });
    if (p.empty()) {
      error(item, "an 'include_paths' entry is empty");
    } else if (p[0] == '/' || p[0] == '~') {
      error(item, fmt::format("'include_paths' entries must be relative to root_path, found '{}'", p));
    } else if (dotdot) {
      error(item, fmt::format("'include_paths' entries cannot contain '..', found '{}'", p));
    } else if (opts_.check_paths && !cs.root_path_resolved.empty()) {
      std::error_code ec;
      if (fs::exists(cs.root_path_resolved, ec) && !fs::exists(fs::path(cs.root_path_resolved) / p, ec)) {
        error(item, fmt::format("include path '{}' does not exist under {}", p, cs.root_path_resolved));
      }
    }
  }
}

void WorkloadDecoder::decode_git(Entry e, CodeSource& cs) {
  if (!e) return;
  const YamlNode* g = e.value;
  Entry branch = get(g, "branch"), commit = get(g, "commit"), remote = get(g, "remote");
  GitRef ref;
  static const std::regex branch_re("^[A-Za-z0-9_./-]+$");
  if (branch) {
    ref.branch = trim(*text(branch));
    if (!std::regex_match(ref.branch, branch_re)) {
      error(*branch.value, fmt::format("invalid git branch name '{}'", ref.branch),
            "use letters, digits, '_', '.', '/' and '-'");
    }
  }
  if (commit) {
    ref.commit = trim(*text(commit));
    static const std::regex sha_re("^[0-9a-fA-F]{4,64}$");
    if (!std::regex_match(ref.commit, sha_re)) {
      error(*commit.value, fmt::format("invalid git commit '{}': expected a hexadecimal commit id", ref.commit));
    }
  }
  if (remote) {
    std::string r = trim(*text(remote));
    std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!(r.empty() || r == "false" || r == "no" || r == "off")) {
      error_key(remote, "'git.remote' is no longer supported", "use 'commit' with a commit that exists locally");
    }
  }
  bool has_branch = g->find("branch") != nullptr, has_commit = g->find("commit") != nullptr;
  if (!has_branch && !has_commit) {
    error_key(e, "'git' must specify either 'branch' or 'commit'", "add 'commit: <sha>' or 'branch: <name>'");
  } else if (has_branch && has_commit) {
    error_key(e, "'git': 'branch' and 'commit' are mutually exclusive", "keep only one of them");
  }
  cs.git = ref;
}

void WorkloadDecoder::decode_run_options(const YamlNode& root, Workload& w) {
  Entry retries = get(&root, "max_retries");
  if (auto v = integer(retries)) {
    w.max_retries = static_cast<int>(*v);
    if (*v < 0) error(*retries.value, fmt::format("'max_retries' must be >= 0, found {}", *v), "use 0 to disable retries");
  }
  Entry timeout = get(&root, "timeout_minutes");
  if (auto v = integer(timeout)) {
    w.timeout_minutes = static_cast<int>(*v);
    if (*v < 1) error(*timeout.value, fmt::format("'timeout_minutes' must be >= 1, found {}", *v), "remove it for no timeout");
  }
  // Minutes and seconds of the health watch (core/health/stall.h): >= 0, fractions allowed, 0 turns it off.
  auto non_negative = [&](const char* key, const char* hint) -> std::optional<double> {
    Entry e = get(&root, key);
    if (!e || !e.value->is_scalar()) return std::nullopt;
    double v = std::strtod(e.value->scalar.c_str(), nullptr);
    if (!(v >= 0) || !std::isfinite(v)) {
      error(*e.value, fmt::format("'{}' must be >= 0, found {}", key, e.value->scalar), hint);
      return std::nullopt;
    }
    return v;
  };
  w.stall_timeout_minutes = non_negative("stall_timeout_minutes", "use 0 to turn the stall watchdog off");
  w.straggler_minutes = non_negative("straggler_minutes", "use 0 to turn the straggler alert off");
  w.system_metrics_interval = non_negative("system_metrics_interval", "use 0 to log no system metrics").value_or(10);
  if (Entry pat = get(&root, "step_pattern")) {
    w.step_pattern = text(pat).value_or("");
    try {
      std::regex re(w.step_pattern, std::regex::ECMAScript);
      if (re.mark_count() < 1)
        error(*pat.value, "'step_pattern' has no group", "put the step number in parentheses, e.g. 'it=(\\d+)'");
    } catch (const std::regex_error& e) {
      error(*pat.value, fmt::format("'step_pattern' is not a valid regular expression: {}", e.what()),
            "an ECMAScript regular expression whose first group is the step number");
    }
  }
  if (Entry cls = get(&root, "priority_class")) {
    w.priority_class = trim(*text(cls));
    static const std::vector<std::string> kClasses = {"BEST_EFFORT", "NORMAL", "CRITICAL"};
    if (std::find(kClasses.begin(), kClasses.end(), w.priority_class) == kClasses.end()) {
      std::string guess = closest_match(w.priority_class, kClasses);
      error(*cls.value, fmt::format("unknown priority_class '{}'", w.priority_class),
            guess.empty() ? "use BEST_EFFORT, NORMAL or CRITICAL" : fmt::format("did you mean '{}'?", guess));
    }
  }
  if (Entry tok = get(&root, "idempotency_token")) {
    w.idempotency_token = trim(*text(tok));
    if (w.idempotency_token.empty()) error_key(tok, "'idempotency_token' is empty", "remove it or give a token");
    else if (w.idempotency_token.size() > 64)
      error(*tok.value, fmt::format("'idempotency_token' is {} characters long; the maximum is 64",
                                    w.idempotency_token.size()));
  }
  if (Entry name = get(&root, "mlflow_run_name")) {
    w.mlflow_run_name = trim(*text(name));
    check_name(name, "mlflow_run_name", 100);
  }
  if (Entry dir = get(&root, "mlflow_experiment_directory")) {
    w.mlflow_experiment_directory = trim(*text(dir));
    if (w.mlflow_experiment_directory.empty()) {
      error_key(dir, "'mlflow_experiment_directory' is empty", "remove it or give a /Workspace/... folder");
    } else if (w.mlflow_experiment_directory.rfind("/Workspace", 0) != 0) {
      error(*dir.value, fmt::format("'mlflow_experiment_directory' must start with '/Workspace', found '{}'",
                                    w.mlflow_experiment_directory),
            "for example /Workspace/Users/me@example.com/experiments");
    }
  }
  decode_permissions(get(&root, "permissions"), w);
  Entry pname = get(&root, "usage_policy_name"), pid = get(&root, "usage_policy_id");
  if (pname) {
    w.usage_policy_name = trim(*text(pname));
    if (w.usage_policy_name.empty()) error_key(pname, "'usage_policy_name' must not be empty");
    else if (w.usage_policy_name.size() > 127)
      error(*pname.value, fmt::format("'usage_policy_name' is {} characters long; the maximum is 127",
                                      w.usage_policy_name.size()));
  }
  if (pid) {
    w.usage_policy_id = trim(*text(pid));
    static const std::regex uuid_re(
        "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");
    if (w.usage_policy_id.empty()) error_key(pid, "'usage_policy_id' must not be empty");
    else if (!std::regex_match(w.usage_policy_id, uuid_re))
      error(*pid.value, fmt::format("'usage_policy_id' must be a UUID, found '{}'", w.usage_policy_id),
            "for example 12345678-90ab-cdef-1234-567890abcdef; to use a name, set usage_policy_name");
  }
  if (root.find("usage_policy_name") && root.find("usage_policy_id") && pid) {
    error_key(pid, "'usage_policy_name' and 'usage_policy_id' are mutually exclusive", "set only one");
  }
}

void WorkloadDecoder::decode_permissions(Entry e, Workload& w) {
  if (!e) return;
  static const char* kinds[] = {"user_name", "group_name", "service_principal_name"};
  for (size_t i = 0; i < e.value->items.size(); ++i) {
    const YamlNode& item = e.value->items[i];
    if (bad_.count(&item) || !item.is_mapping()) continue;
    Permission p;
    int principals = 0;
    for (const char* kind : kinds) {
      if (!item.find(kind)) continue;
      ++principals;
      if (Entry pe = get(&item, kind)) {
        p.principal_kind = kind;
        p.principal = trim(*text(pe));
        if (p.principal.empty()) error_key(pe, fmt::format("permissions[{}]: '{}' is empty", i, kind));
      }
    }
    if (principals == 0) {
      error(item, fmt::format("permissions[{}]: one of 'user_name', 'group_name' or 'service_principal_name' is "
                              "required",
                              i));
    } else if (principals > 1) {
      error(item, fmt::format("permissions[{}]: only one of 'user_name', 'group_name' or 'service_principal_name' "
                              "may be given",
                              i),
            "split it into one entry per principal");
    }
    if (Entry level = get(&item, "level")) {
      p.level = trim(*text(level));
      if (p.level.empty()) error_key(level, fmt::format("permissions[{}]: 'level' is empty", i));
      else if (p.level != "CAN_VIEW" && p.level != "CAN_MANAGE_RUN" && p.level != "CAN_MANAGE")
        error(*level.value, fmt::format("permissions[{}]: unknown level '{}'", i, p.level),
              "use CAN_VIEW, CAN_MANAGE_RUN or CAN_MANAGE (Databricks' job permission levels)");
    }
    w.permissions.push_back(p);
  }
}

}  // namespace air
