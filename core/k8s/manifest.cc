// Building the Kubernetes objects of a run: a headless Service and an Indexed Job, or one JobSet. Each pod
// runs the node agent, exactly as the local and Slurm backends do; Kubernetes only supplies the node's rank
// and node 0's DNS name. docs/kubernetes.md explains every field.
#include "core/k8s/manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/base/sha256.h"
#include "core/base/version.h"

namespace air {

namespace {

using nlohmann::json;

int digits(int n) { return n < 10 ? 1 : 1 + digits(n / 10); }

// Kubernetes expands $(VAR) in env values, command and args, and turns "$$" into "$"; doubling every '$'
// that starts either keeps the text exactly as written.
std::string escape_k8s_expansion(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '$' && i + 1 < s.size() && (s[i + 1] == '(' || s[i + 1] == '$')) out += '$';
  }
  return out;
}

json labels(const std::string& base) {
  return {{"app.kubernetes.io/name", "air"}, {kK8sInstanceLabel, base}, {"app.kubernetes.io/managed-by", "air"}};
}

json metadata(const Workload& w, const K8sOptions& o, const std::string& name) {
  json annotations = {{"air/experiment-name", w.experiment_name}, {"air/accelerator-type", w.compute.accelerator_type}};
  if (!o.run_id.empty()) annotations["air/run-id"] = o.run_id;
  return {{"name", name}, {"labels", labels(name)}, {"annotations", annotations}};
}

json field_env(const std::string& name, const std::string& path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}

json value_env(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", escape_k8s_expansion(value)}};
}

// What air sets (these win, as on the agent), then the workload's variables, then its secrets by reference.
json container_env(const Workload& w, const K8sOptions& o, const K8sNames& n) {
  json env = json::array();
  env.push_back(field_env("NODE_RANK", "metadata.annotations['batch.kubernetes.io/job-completion-index']"));
  env.push_back(value_env("NUM_NODES", std::to_string(w.compute.nodes)));
  env.push_back(value_env("LOCAL_WORLD_SIZE", std::to_string(w.compute.accelerators_per_node)));
  env.push_back(value_env("MASTER_ADDR", n.master_addr));
  env.push_back(value_env("MASTER_PORT", std::to_string(o.master_port)));
  env.push_back(value_env("AIR_SERVER", o.server_url.empty() ? kK8sServerPlaceholder : o.server_url));
  env.push_back(value_env("AIR_RUN_ID", o.run_id.empty() ? kK8sRunIdPlaceholder : o.run_id));
  if (o.flavor == K8sFlavor::kJobSet) {
    env.push_back(field_env("JOBSET_RESTART_ATTEMPT", "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']"));
  } else {
    env.push_back(value_env("AIR_ATTEMPT", std::to_string(o.attempt)));
  }
  std::set<std::string> taken;
  for (const auto& e : env) taken.insert(e["name"].get<std::string>());
  for (const auto& [k, v] : w.env_variables) {
    if (taken.insert(k).second) env.push_back(value_env(k, v));
  }
  for (const auto& s : w.secrets) {
    if (!taken.insert(s.name).second) continue;
    env.push_back({{"name", s.name},
                   {"valueFrom", {{"secretKeyRef", {{"name", k8s_secret_name(s.scope)}, {"key", s.key}}}}}});
  }
  return env;
}

// The container's entrypoint: the node's own token from the mounted Secret (never in the pod spec, never in
// argv), then `air node`, which fetches the spec, the snapshot and the hyperparameters and ships the logs.
std::string agent_script(const K8sOptions& o) {
  std::string s = "set -eu\n";
  if (o.flavor == K8sFlavor::kJobSet) s += "AIR_ATTEMPT=$((JOBSET_RESTART_ATTEMPT + 1))\n";
  s += fmt::format("AIR_NODE_TOKEN=\"$(cat {}/node-$NODE_RANK)\"\n", kK8sTokenDir);
  s += "export AIR_NODE_TOKEN\n";
  s += fmt::format(
      "exec air node --server \"$AIR_SERVER\" --run \"$AIR_RUN_ID\" --attempt \"$AIR_ATTEMPT\" --node \"$NODE_RANK\" "
      "--workdir {}\n",
      kK8sWorkdir);
  return escape_k8s_expansion(s);
}

json container(const Workload& w, const K8sOptions& o, const K8sNames& n) {
  std::string image = o.image;
  if (image.empty()) image = w.environment.docker_image ? w.environment.docker_image->url
                                                         : std::string(kK8sDefaultImage) + version();
  json mounts = json::array({{{"name", "workdir"}, {"mountPath", kK8sWorkdir}},
                             {{"name", "node-tokens"}, {"mountPath", kK8sTokenDir}, {"readOnly", true}}});
  json resources;
  if (w.compute.gpu) {
    // Extended resources are set as limits; the request defaults to the limit and may not differ from it.
    resources = {{"limits", {{"nvidia.com/gpu", w.compute.accelerators_per_node}}}};
    // NCCL and DataLoader workers need more shared memory than the container runtime's 64 MiB default.
    mounts.push_back({{"name", "dshm"}, {"mountPath", "/dev/shm"}});
  } else {
    resources = {{"requests", {{"cpu", std::to_string(w.compute.accelerators_per_node)}}}};
  }
  return {{"name", "node"},
          {"image", image},
          {"command", {"/bin/sh", "-c"}},
          {"args", {agent_script(o)}},
          {"env", container_env(w, o, n)},
          {"ports", json::array({{{"name", "rendezvous"}, {"containerPort", o.master_port}}})},
          {"resources", resources},
          {"volumeMounts", mounts}};
}

json pod_template(const Workload& w, const K8sOptions& o, const K8sNames& n) {
  json volumes = json::array(
      {{{"name", "workdir"}, {"emptyDir", json::object()}},
       {{"name", "node-tokens"}, {"secret", {{"secretName", n.token_secret}, {"defaultMode", 0400}}}}});
  if (w.compute.gpu) volumes.push_back({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}});
  json spec = {{"restartPolicy", "Never"},
               // The agent stops its command (TERM, KILL after 5 s) and drains its log spool for up to 10 s.
               {"terminationGracePeriodSeconds", 30},
               {"containers", json::array({container(w, o, n)})},
               {"volumes", volumes}};
  // A JobSet sets the subdomain of its pods itself (spec.network.subdomain).
  if (o.flavor == K8sFlavor::kIndexedJob) spec["subdomain"] = n.base;
  return {{"metadata", {{"labels", labels(n.base)}}}, {"spec", spec}};
}

// One attempt as an Indexed Job: the first node that fails fails the whole Job, whose controller then
// deletes the other pods. Retries are whole new attempts (a new Job, or the JobSet's restart).
json job_spec(const Workload& w, const K8sOptions& o, const K8sNames& n) {
  json spec = {{"completionMode", "Indexed"},
               {"completions", w.compute.nodes},
               {"parallelism", w.compute.nodes},
               {"backoffLimit", 0},
               {"podFailurePolicy",
                {{"rules", json::array({{{"action", "FailJob"},
                                         {"onExitCodes", {{"containerName", "node"}, {"operator", "NotIn"}, {"values", {0}}}}},
                                        {{"action", "FailJob"},
                                         {"onPodConditions", json::array({{{"type", "DisruptionTarget"}, {"status", "True"}}})}}})}}},
               {"template", pod_template(w, o, n)}};
  if (w.timeout_minutes) spec["activeDeadlineSeconds"] = *w.timeout_minutes * 60;
  return spec;
}

json headless_service(const Workload& w, const K8sOptions& o, const K8sNames& n) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", metadata(w, o, n.base)},
          {"spec",
           {{"clusterIP", "None"},
            // Nodes look node 0 up before it is Ready; its record must exist as soon as it has an address.
            {"publishNotReadyAddresses", true},
            {"selector", {{"app.kubernetes.io/name", "air"}, {kK8sInstanceLabel, n.base}}},
            {"ports", json::array({{{"name", "rendezvous"}, {"port", o.master_port}, {"targetPort", o.master_port}}})}}}};
}

json jobset(const Workload& w, const K8sOptions& o, const K8sNames& n) {
  return {{"apiVersion", "jobset.x-k8s.io/v1alpha2"},
          {"kind", "JobSet"},
          {"metadata", metadata(w, o, n.base)},
          {"spec",
           {{"network", {{"enableDNSHostnames", true}, {"subdomain", n.base}, {"publishNotReadyAddresses", true}}},
            {"failurePolicy", {{"maxRestarts", w.max_retries}}},
            {"successPolicy", {{"operator", "All"}}},
            {"replicatedJobs",
             json::array({{{"name", kK8sReplicatedJob},
                           {"replicas", 1},
                           {"template", {{"metadata", {{"labels", labels(n.base)}}}, {"spec", job_spec(w, o, n)}}}}})}}}};
}

}  // namespace

std::string k8s_name(std::string_view text, size_t max_len) {
  constexpr size_t kHashLen = 6;
  max_len = std::clamp<size_t>(max_len, kHashLen + 6, 63);
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    char lower = (u >= 'A' && u <= 'Z') ? static_cast<char>(u - 'A' + 'a') : c;
    bool ok = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
    if (ok) {
      out += lower;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty() || !(out[0] >= 'a' && out[0] <= 'z')) out = out.empty() ? "air" : "air-" + out;
  if (out == text && out.size() <= max_len) return out;
  std::string head = out.substr(0, std::min(out.size(), max_len - kHashLen - 1));
  while (!head.empty() && head.back() == '-') head.pop_back();
  return head + "-" + sha256_hex(text).substr(0, kHashLen);
}

K8sNames k8s_names(const Workload& w, const K8sOptions& o) {
  std::string text = o.run_id.empty() ? w.experiment_name : w.experiment_name + "-" + o.run_id;
  // Pod hostnames are <job>-<index> (Indexed Job) or <jobset>-node-0-<index> (JobSet); each must be a label.
  int index_digits = digits(std::max(0, w.compute.nodes - 1));
  size_t suffix = o.flavor == K8sFlavor::kJobSet ? fmt::format("-{}-0-", kK8sReplicatedJob).size() + index_digits
                                                 : 1 + index_digits;
  K8sNames n;
  n.base = k8s_name(text, 63 - suffix);
  n.master_addr = o.flavor == K8sFlavor::kJobSet ? fmt::format("{}-{}-0-0.{}", n.base, kK8sReplicatedJob, n.base)
                                                 : fmt::format("{}-0.{}", n.base, n.base);
  n.token_secret = n.base + "-node-tokens";
  return n;
}

std::string k8s_secret_name(const std::string& scope) { return "air-scope-" + k8s_name(scope, 53); }

json k8s_manifests(const Workload& w, const K8sOptions& o) {
  K8sNames n = k8s_names(w, o);
  if (o.flavor == K8sFlavor::kJobSet) return json::array({jobset(w, o, n)});
  json job = {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", metadata(w, o, n.base)}, {"spec", job_spec(w, o, n)}};
  return json::array({headless_service(w, o, n), job});
}

json k8s_list(const json& objects) { return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}}; }

}  // namespace air
