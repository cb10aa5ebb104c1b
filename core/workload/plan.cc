// Rendering the dry-run plan. The text form is for people (aligned, capped lists); the JSON form holds
// everything (every node, every file count) for tools.
#include "core/workload/plan.h"

#include <fmt/format.h>

namespace air {

namespace {

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    out += line.empty() ? "\n" : prefix + line + "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

// Nodes shown in the text plan: all up to 4, else the first two and the last.
std::vector<int> shown_nodes(int nodes) {
  std::vector<int> out;
  if (nodes <= 4) {
    for (int i = 0; i < nodes; ++i) out.push_back(i);
  } else {
    out = {0, 1, nodes - 1};
  }
  return out;
}

std::string compute_line(const Compute& c) {
  return fmt::format("{} {} x {} {} per node ({}), {} in all", c.nodes, c.nodes == 1 ? "node" : "nodes",
                     c.accelerators_per_node, c.gpu ? "GPU" : "CPU rank slots", c.accelerator_type,
                     c.num_accelerators);
}

}  // namespace

std::string human_bytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::vector<std::pair<std::string, std::string>> planned_node_environment(const Workload& w, int rank) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"NUM_NODES", std::to_string(w.compute.nodes)},
      {"NODE_RANK", std::to_string(rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(w.compute.accelerators_per_node)},
      {"MASTER_ADDR", kMasterAddrPlaceholder},
      {"MASTER_PORT", kMasterPortPlaceholder},
  };
  if (w.code_source) env.emplace_back("CODE_SOURCE_PATH", kCodeSourcePlaceholder);
  env.emplace_back("HYPERPARAMETERS_PATH", kHyperparametersPlaceholder);
  for (const auto& kv : w.env_variables) env.push_back(kv);
  return env;
}

std::string render_plan_text(const PlanInput& in) {
  const Workload& w = *in.workload;
  std::string out = fmt::format("Dry run: \"{}\" is valid; nothing was submitted.\n\n", w.experiment_name);
  for (const auto& note : in.overrides) out += note + "\n";
  if (!in.overrides.empty()) out += "\n";
  out += fmt::format("experiment     {}\n", w.experiment_name);
  out += fmt::format("compute        {}\n", compute_line(w.compute));
  out += fmt::format("retries        {} (the whole run is retried on failure)\n", w.max_retries);
  out += fmt::format("timeout        {}\n", w.timeout_minutes ? fmt::format("{} minutes", *w.timeout_minutes)
                                                               : std::string("none"));
  if (w.stall_timeout_minutes)
    out += *w.stall_timeout_minutes > 0
               ? fmt::format("stall timeout  {} minutes without a log line or a busy GPU fails the attempt\n",
                             *w.stall_timeout_minutes)
               : std::string("stall timeout  off\n");
  if (!w.mlflow_run_name.empty())
    out += fmt::format("mlflow run     {} (a retry: {}-attempt-<k>)\n", w.mlflow_run_name, w.mlflow_run_name);
  if (!w.mlflow_experiment_directory.empty())
    out += fmt::format("mlflow folder  {} (kept with the run; the experiment is named by experiment_name)\n",
                       w.mlflow_experiment_directory);
  if (w.environment.version) out += fmt::format("env version    {}\n", *w.environment.version);
  if (w.environment.docker_image) {
    out += fmt::format("docker image   {} (tag policy {})\n", w.environment.docker_image->url,
                       w.environment.docker_image->tag_policy);
  }
  for (int rank : shown_nodes(w.compute.nodes)) {
    if (rank == w.compute.nodes - 1 && w.compute.nodes > 4) {
      out += fmt::format("\n(nodes 2 to {} differ from node 1 only in NODE_RANK)\n", w.compute.nodes - 2);
    }
    out += fmt::format("\nnode {} environment\n", rank);
    for (const auto& [k, v] : planned_node_environment(w, rank)) out += fmt::format("  {}={}\n", k, v);
    for (const auto& s : w.secrets) out += fmt::format("  {} <- secret {}/{}\n", s.name, s.scope, s.key);
  }
  out += "\nhyperparameters file (HYPERPARAMETERS_PATH)\n";
  out += w.parameters_yaml.empty() ? "  (empty: no parameters)\n" : indent(w.parameters_yaml, "  ");
  out += "\ncommand (bash, on every node)\n" + indent(w.command, "  ");
  if (!w.environment.dependencies.empty()) {
    out += "\ndependencies (pip)\n";
    for (const auto& d : w.environment.dependencies) out += "  " + d + "\n";
  }
  if (w.code_source) {
    const CodeSource& cs = *w.code_source;
    out += fmt::format("\nsnapshot of {} (root_path: {})\n", cs.root_path_resolved, cs.root_path);
    if (!cs.include_paths.empty()) {
      std::string inc;
      for (const auto& p : cs.include_paths) inc += (inc.empty() ? "" : ", ") + p;
      out += "  include paths: " + inc + "\n";
    }
    if (cs.git) {
      out += cs.git->commit.empty() ? fmt::format("  git branch {}\n", cs.git->branch)
                                    : fmt::format("  git commit {}\n", cs.git->commit);
    }
    if (!in.snapshot_source.empty()) out += "  source: " + in.snapshot_source + "\n";
    out += cs.remote_volume.empty() ? std::string("  stored in: the workspace's snapshot store\n")
                                    : "  stored in: " + cs.remote_volume + "/.internal/<sha256>.tar.zst (remote_volume)\n";
    if (const SnapshotManifest* m = in.snapshot) {
      out += fmt::format("  {} {}, {}\n", m->files.size(), m->files.size() == 1 ? "file" : "files", human_bytes(m->total_bytes));
      if (!m->largest.empty()) {
        out += "  largest files:\n";
        for (size_t i = 0; i < m->largest.size() && i < 5; ++i)
          out += fmt::format("    {:>10}  {}\n", human_bytes(m->largest[i].size), m->largest[i].path);
      }
      if (!m->excluded.empty()) {
        out += "  excluded by ignore rules:\n";
        for (const auto& r : m->excluded)
          out += fmt::format("    {:>6} {}  {} ({})\n", r.files_excluded, r.files_excluded == 1 ? "file " : "files",
                             r.pattern, r.source);
      }
    }
  }
  if (!in.warnings.empty()) {
    out += "\n";
    for (const auto& d : in.warnings) out += render(d);
  }
  return out;
}

nlohmann::json plan_to_json(const PlanInput& in) {
  using nlohmann::json;
  const Workload& w = *in.workload;
  json nodes = json::array();
  for (int rank = 0; rank < w.compute.nodes; ++rank) {
    json env = json::object();
    for (const auto& [k, v] : planned_node_environment(w, rank)) env[k] = v;
    json secrets = json::array();
    for (const auto& s : w.secrets) secrets.push_back({{"name", s.name}, {"scope", s.scope}, {"key", s.key}});
    nodes.push_back({{"node_rank", rank}, {"env", env}, {"secrets", secrets}});
  }
  json j = {{"status", "DRY_RUN_OK"},
            {"dry_run", true},
            {"experiment_name", w.experiment_name},
            {"compute",
             {{"accelerator_type", w.compute.accelerator_type},
              {"num_accelerators", w.compute.num_accelerators},
              {"accelerators_per_node", w.compute.accelerators_per_node},
              {"nodes", w.compute.nodes},
              {"gpu", w.compute.gpu}}},
            {"nodes", nodes},
            {"hyperparameters_yaml", w.parameters_yaml},
            {"command", w.command},
            {"dependencies", w.environment.dependencies},
            {"max_retries", w.max_retries},
            {"timeout_minutes", w.timeout_minutes ? json(*w.timeout_minutes) : json(nullptr)},
            {"overrides", in.overrides}};
  if (w.environment.version) j["environment_version"] = *w.environment.version;
  if (w.environment.docker_image) {
    const auto& d = *w.environment.docker_image;
    j["docker_image"] = {{"url", d.url}, {"tag_policy", d.tag_policy}};
  }
  if (!w.mlflow_run_name.empty()) j["mlflow_run_name"] = w.mlflow_run_name;
  if (!w.mlflow_experiment_directory.empty()) j["mlflow_experiment_directory"] = w.mlflow_experiment_directory;
  if (w.stall_timeout_minutes) j["stall_timeout_minutes"] = *w.stall_timeout_minutes;
  if (w.straggler_minutes) j["straggler_minutes"] = *w.straggler_minutes;
  if (w.system_metrics_interval != 10) j["system_metrics_interval"] = w.system_metrics_interval;
  if (!w.step_pattern.empty()) j["step_pattern"] = w.step_pattern;
  if (w.code_source) {
    const CodeSource& cs = *w.code_source;
    json c = {{"type", cs.type},
              {"root_path", cs.root_path},
              {"root_path_resolved", cs.root_path_resolved},
              {"include_paths", cs.include_paths}};
    if (cs.git) c["git"] = cs.git->commit.empty() ? json{{"branch", cs.git->branch}} : json{{"commit", cs.git->commit}};
    if (!in.snapshot_source.empty()) c["source"] = in.snapshot_source;
    if (!cs.remote_volume.empty()) c["remote_volume"] = cs.remote_volume;
    if (const SnapshotManifest* m = in.snapshot) {
      json largest = json::array(), excluded = json::array();
      for (const auto& f : m->largest) largest.push_back({{"path", f.path}, {"bytes", f.size}});
      for (const auto& r : m->excluded)
        excluded.push_back({{"source", r.source}, {"pattern", r.pattern}, {"files_excluded", r.files_excluded}});
      c["snapshot"] = {{"root", m->root},
                       {"files", m->files.size()},
                       {"bytes", m->total_bytes},
                       {"largest", largest},
                       {"excluded", excluded},
                       {"credential_like", m->credential_like}};
    }
    j["code_source"] = c;
  }
  json warnings = json::array();
  for (const auto& d : in.warnings) warnings.push_back(to_json(d));
  j["warnings"] = warnings;
  return j;
}

}  // namespace air
