// Kubernetes manifests for a validated workload (paper design: docs/kubernetes.md). A pure function of the
// workload: `air run --dry-run --backend k8s` prints them; nothing here talks to a cluster.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/workload/workload.h"

namespace air {

enum class K8sFlavor {
  kIndexedJob,  // a headless Service + a batch/v1 Indexed Job (core Kubernetes, no add-on)
  kJobSet,      // one jobset.x-k8s.io/v1alpha2 JobSet (needs the JobSet controller; restarts the gang itself)
};

struct K8sOptions {
  K8sFlavor flavor = K8sFlavor::kIndexedJob;
  std::string image;        // empty: the workload's docker_image.url, else kK8sDefaultImage + version
  std::string run_id;       // empty in a dry-run: names come from experiment_name alone
  int attempt = 1;          // the Indexed Job flavor runs one attempt per Job
  std::string server_url;   // where agents reach the workspace; empty: a placeholder
  int master_port = 29500;  // every pod has its own IP, so a fixed port cannot clash
};

inline constexpr const char* kK8sDefaultImage = "air:";  // + version(); no image is published
inline constexpr const char* kK8sServerPlaceholder = "<workspace URL, at submit>";
inline constexpr const char* kK8sRunIdPlaceholder = "<run id, at submit>";
inline constexpr const char* kK8sWorkdir = "/air/run";
inline constexpr const char* kK8sTokenDir = "/var/run/air/tokens";
inline constexpr const char* kK8sReplicatedJob = "node";  // the JobSet's one replicated Job
// The label the Service selects on (with app.kubernetes.io/name: air).
inline constexpr const char* kK8sInstanceLabel = "app.kubernetes.io/instance";

// A valid DNS-1123 label (and DNS-1035 label: it starts with a letter) of at most max_len (<= 63) characters
// made from any text: lowercased, runs of anything but [a-z0-9] become one '-', '-' trimmed at both ends,
// "air-" put in front of an empty name or one that starts with a digit. When that changed the text in any
// way, or it had to be cut to fit, "-" + 6 hex digits of the text's SHA-256 end it, so two different inputs
// never share a name.
std::string k8s_name(std::string_view text, size_t max_len = 63);

// The objects to apply, in order: [Service, Job] or [JobSet]. Secret values never appear: workload secrets
// are secretKeyRefs to Secrets named by k8s_secret_name(scope), node tokens a mounted Secret
// (k8s_names(...).token_secret) the workspace creates per attempt.
nlohmann::json k8s_manifests(const Workload& w, const K8sOptions& o = {});

struct K8sNames {
  std::string base;          // Service, Job or JobSet name (also the headless Service / subdomain)
  std::string master_addr;   // node 0's DNS name: <job>-0.<service> or <jobset>-node-0-0.<jobset>
  std::string token_secret;  // <base>-node-tokens
};
K8sNames k8s_names(const Workload& w, const K8sOptions& o = {});
// air-scope-<scope as a name>: the Secret that holds the keys of one secret scope.
std::string k8s_secret_name(const std::string& scope);

// Renders objects as YAML documents separated by "---" (what `kubectl apply -f -` reads). Strings are
// plain where nothing else could be read, else double-quoted (so "1" stays a string); multi-line ones become
// literal blocks.
std::string k8s_yaml_documents(const nlohmann::json& objects);
// {"apiVersion": "v1", "kind": "List", "items": objects}: one JSON document kubectl also applies.
nlohmann::json k8s_list(const nlohmann::json& objects);

}  // namespace air
