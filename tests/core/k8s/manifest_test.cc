// The Kubernetes manifests of the example workloads have the shapes the Kubernetes API documents (Service,
// batch/v1 Indexed Job, jobset.x-k8s.io/v1alpha2 JobSet), names are valid DNS labels for any experiment name,
// secrets appear only by reference, and the YAML rendering reads back as the same objects.
#include <catch2/catch.hpp>

#include <cctype>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "core/k8s/manifest.h"
#include "core/workload/workload.h"

using nlohmann::json;

namespace {

const std::string kExamples = std::string(AIR_TEST_DATA_DIR) + "/../examples";

air::Workload load(const std::string& example) {
  air::ParseResult r = air::parse_workload_file(kExamples + "/" + example + "/train.yaml");
  REQUIRE(r.ok());
  return *r.workload;
}

bool dns1123_label(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

bool dns1035_label(const std::string& s) {
  static const std::regex re("[a-z]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

const json* find_env(const json& container, const std::string& name) {
  for (const auto& e : container.at("env")) {
    if (e.at("name") == name) return &e;
  }
  return nullptr;
}

std::string env_value(const json& container, const std::string& name) {
  const json* e = find_env(container, name);
  REQUIRE(e != nullptr);
  REQUIRE(e->contains("value"));
  return e->at("value").get<std::string>();
}

// Checks a batch/v1 Job spec in Indexed mode (alone, or as a JobSet's template) and returns its container.
json check_indexed_job_spec(const json& spec, const air::Workload& w) {
  CHECK(spec.at("completionMode") == "Indexed");
  CHECK(spec.at("completions") == w.compute.nodes);
  CHECK(spec.at("parallelism") == w.compute.nodes);
  CHECK(spec.at("backoffLimit") == 0);  // one failed node fails the attempt: gang semantics
  const json& rules = spec.at("podFailurePolicy").at("rules");
  REQUIRE(rules.size() == 2);
  CHECK(rules[0].at("action") == "FailJob");
  CHECK(rules[0].at("onExitCodes").at("operator") == "NotIn");
  CHECK(rules[0].at("onExitCodes").at("values") == json::array({0}));
  if (w.timeout_minutes) {
    CHECK(spec.at("activeDeadlineSeconds") == *w.timeout_minutes * 60);
  } else {
    CHECK_FALSE(spec.contains("activeDeadlineSeconds"));
  }
  const json& pod = spec.at("template").at("spec");
  CHECK(pod.at("restartPolicy") == "Never");  // required by podFailurePolicy
  REQUIRE(pod.at("containers").size() == 1);
  json c = pod.at("containers")[0];
  CHECK(c.at("name") == "node");
  CHECK(rules[0].at("onExitCodes").at("containerName") == c.at("name"));
  const json* rank = find_env(c, "NODE_RANK");
  REQUIRE(rank != nullptr);
  CHECK(rank->at("valueFrom").at("fieldRef").at("fieldPath") ==
        "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  CHECK(env_value(c, "NUM_NODES") == std::to_string(w.compute.nodes));
  CHECK(env_value(c, "LOCAL_WORLD_SIZE") == std::to_string(w.compute.accelerators_per_node));
  CHECK(env_value(c, "MASTER_PORT") == "29500");
  for (const auto& [k, v] : w.env_variables) CHECK(env_value(c, k) == v);
  // Volumes the container mounts exist in the pod.
  std::set<std::string> volumes;
  for (const auto& v : pod.at("volumes")) volumes.insert(v.at("name").get<std::string>());
  for (const auto& m : c.at("volumeMounts")) CHECK(volumes.count(m.at("name").get<std::string>()) == 1);
  return c;
}

void check_resources(const json& c, const air::Workload& w) {
  if (w.compute.gpu) {
    CHECK(c.at("resources").at("limits").at("nvidia.com/gpu") == w.compute.accelerators_per_node);
  } else {
    CHECK_FALSE(c.dump().find("nvidia.com/gpu") != std::string::npos);
    CHECK(c.at("resources").at("requests").at("cpu") == std::to_string(w.compute.accelerators_per_node));
  }
}

// YAML -> JSON the way Kubernetes' YAML 1.1 reader types scalars: quoted and block scalars are strings; plain
// ones are booleans (true/false/yes/no/on/off/y/n), null, numbers, or else strings.
json yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json j = json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    json j = json::array();
    for (const auto& item : n) j.push_back(yaml_to_json(item));
    return j;
  }
  if (n.IsNull()) return nullptr;
  std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted or block scalar
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* t : {"true", "yes", "on", "y"}) if (lower == t) return true;
  for (const char* f : {"false", "no", "off", "n"}) if (lower == f) return false;
  if (lower == "null" || s == "~") return nullptr;
  static const std::regex number("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|0o?[0-7]+");
  if (std::regex_match(s, number)) return json::parse(s);
  return s;
}

}  // namespace

TEST_CASE("Indexed Job and headless Service for the example workloads") {
  std::string example = GENERATE(as<std::string>{}, "multinode_llm_sft", "tiny_cpu");
  INFO(example);
  air::Workload w = load(example);
  json objs = air::k8s_manifests(w);
  REQUIRE(objs.size() == 2);
  const json& svc = objs[0];
  const json& job = objs[1];
  CHECK(svc.at("apiVersion") == "v1");
  CHECK(svc.at("kind") == "Service");
  CHECK(job.at("apiVersion") == "batch/v1");
  CHECK(job.at("kind") == "Job");
  std::string name = job.at("metadata").at("name");
  CHECK(name == w.experiment_name);  // already a valid label: kept as it is
  CHECK(dns1035_label(svc.at("metadata").at("name")));
  CHECK(svc.at("spec").at("clusterIP") == "None");
  CHECK(svc.at("spec").at("publishNotReadyAddresses") == true);

  json c = check_indexed_job_spec(job.at("spec"), w);
  check_resources(c, w);
  const json& tmpl = job.at("spec").at("template");
  CHECK(tmpl.at("spec").at("subdomain") == svc.at("metadata").at("name"));
  // The Service selects exactly the pods of this Job: its selector is a subset of the pod labels.
  for (const auto& [k, v] : svc.at("spec").at("selector").items()) CHECK(tmpl.at("metadata").at("labels").at(k) == v);
  CHECK(svc.at("spec").at("selector").contains("app.kubernetes.io/instance"));
  // Node 0's hostname is <job>-0, under the Service's subdomain.
  CHECK(env_value(c, "MASTER_ADDR") == name + "-0." + name);
  CHECK(env_value(c, "AIR_ATTEMPT") == "1");
  std::string pod_hostname = name + "-" + std::to_string(w.compute.nodes - 1);
  CHECK(dns1123_label(pod_hostname));
}

TEST_CASE("GPU types request nvidia.com/gpu and shared memory and CPU types neither") {
  air::Workload gpu = load("multinode_llm_sft");
  json c = air::k8s_manifests(gpu)[1]["spec"]["template"]["spec"]["containers"][0];
  CHECK(c["resources"] == json({{"limits", {{"nvidia.com/gpu", 8}}}}));
  CHECK(c["volumeMounts"].dump().find("/dev/shm") != std::string::npos);

  air::Workload cpu = load("tiny_cpu");
  json pod = air::k8s_manifests(cpu)[1]["spec"]["template"]["spec"];
  CHECK(pod["containers"][0]["resources"] == json({{"requests", {{"cpu", "2"}}}}));
  CHECK(pod.dump().find("nvidia.com/gpu") == std::string::npos);
  CHECK(pod.dump().find("/dev/shm") == std::string::npos);
}

TEST_CASE("secrets and node tokens appear only as references") {
  air::Workload w = load("multinode_llm_sft");
  json objs = air::k8s_manifests(w);
  json c = objs[1]["spec"]["template"]["spec"]["containers"][0];
  const json* hf = find_env(c, "HF_TOKEN");
  REQUIRE(hf != nullptr);
  CHECK_FALSE(hf->contains("value"));
  const json& ref = hf->at("valueFrom").at("secretKeyRef");
  CHECK(ref.at("name") == air::k8s_secret_name("my_scope"));
  CHECK(ref.at("key") == "hf_token");
  CHECK(dns1123_label(ref.at("name")));
  CHECK_FALSE(find_env(c, "AIR_NODE_TOKEN"));  // read from the mounted Secret by the entrypoint
  json volumes = objs[1]["spec"]["template"]["spec"]["volumes"];
  bool token_volume = false;
  for (const auto& v : volumes) {
    if (v.contains("secret")) {
      token_volume = true;
      CHECK(v["secret"]["secretName"] == air::k8s_names(w).token_secret);
      CHECK(v["secret"]["defaultMode"] == 0400);
    }
  }
  CHECK(token_volume);
  CHECK(c["args"][0].get<std::string>().find("node-$NODE_RANK") != std::string::npos);
}

TEST_CASE("JobSet: one object with its own headless network and gang restarts") {
  std::string example = GENERATE(as<std::string>{}, "multinode_llm_sft", "tiny_cpu");
  INFO(example);
  air::Workload w = load(example);
  air::K8sOptions o;
  o.flavor = air::K8sFlavor::kJobSet;
  json objs = air::k8s_manifests(w, o);
  REQUIRE(objs.size() == 1);
  const json& js = objs[0];
  CHECK(js.at("apiVersion") == "jobset.x-k8s.io/v1alpha2");
  CHECK(js.at("kind") == "JobSet");
  std::string name = js.at("metadata").at("name");
  CHECK(dns1035_label(name));
  const json& spec = js.at("spec");
  CHECK(spec.at("network").at("enableDNSHostnames") == true);
  CHECK(spec.at("network").at("subdomain") == name);
  CHECK(spec.at("failurePolicy").at("maxRestarts") == w.max_retries);
  REQUIRE(spec.at("replicatedJobs").size() == 1);
  const json& rj = spec.at("replicatedJobs")[0];
  CHECK(rj.at("replicas") == 1);
  json c = check_indexed_job_spec(rj.at("template").at("spec"), w);
  check_resources(c, w);
  CHECK_FALSE(rj.at("template").at("spec").at("template").at("spec").contains("subdomain"));
  std::string rjname = rj.at("name");
  CHECK(env_value(c, "MASTER_ADDR") == name + "-" + rjname + "-0-0." + name);
  CHECK(dns1123_label(name + "-" + rjname + "-0-" + std::to_string(w.compute.nodes - 1)));
  const json* attempt = find_env(c, "JOBSET_RESTART_ATTEMPT");
  REQUIRE(attempt != nullptr);
  CHECK(attempt->at("valueFrom").at("fieldRef").at("fieldPath") ==
        "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']");
}

TEST_CASE("k8s_name makes a valid and distinct label from any text") {
  CHECK(air::k8s_name("tiny-cpu-env") == "tiny-cpu-env");
  std::vector<std::string> weird = {"",          "_",         "---",        "9lives",        "My_Experiment",
                                    "my-experiment", "MY-EXPERIMENT", "a__b--c", "-lead-", "ünïcode ñame",
                                    std::string(100, 'x'), std::string(100, 'x') + "y", "a.b/c d",
                                    std::string("nul\0byte", 8), "trailing-"};
  std::set<std::string> names;
  for (const auto& text : weird) {
    std::string n = air::k8s_name(text);
    INFO("'" << text << "' -> '" << n << "'");
    CHECK(dns1035_label(n));
    CHECK(n == air::k8s_name(text));  // deterministic
    names.insert(n);
    for (size_t max : {12u, 20u, 40u}) {
      std::string cut = air::k8s_name(text, max);
      CHECK(cut.size() <= max);
      CHECK(dns1035_label(cut));
    }
  }
  CHECK(names.size() == weird.size());  // no two inputs share a name
  CHECK(air::k8s_name("My_Experiment").rfind("my-experiment-", 0) == 0);
  CHECK(air::k8s_name("9lives").rfind("air-9lives-", 0) == 0);
}

TEST_CASE("names fit the pod hostnames for long experiment names and many nodes") {
  air::Workload w = load("tiny_cpu");
  w.experiment_name = std::string(100, 'A') + "_long";
  w.compute.nodes = 1000;
  w.compute.num_accelerators = 2000;
  for (auto flavor : {air::K8sFlavor::kIndexedJob, air::K8sFlavor::kJobSet}) {
    air::K8sOptions o;
    o.flavor = flavor;
    o.run_id = "r-0123456789ABCDEF";
    air::K8sNames n = air::k8s_names(w, o);
    INFO(n.base);
    CHECK(dns1035_label(n.base));
    std::string last = flavor == air::K8sFlavor::kJobSet ? n.base + "-node-0-999" : n.base + "-999";
    CHECK(last.size() <= 63);
    CHECK(dns1123_label(last));
    CHECK(n.master_addr.substr(n.master_addr.find('.') + 1) == n.base);
    json objs = air::k8s_manifests(w, o);
    CHECK(objs.back()["metadata"]["annotations"]["air/experiment-name"] == w.experiment_name);
    CHECK(objs.back()["metadata"]["annotations"]["air/run-id"] == o.run_id);
  }
}

TEST_CASE("env values and the entrypoint survive Kubernetes' $(VAR) expansion") {
  air::Workload w = load("tiny_cpu");
  w.env_variables = {{"LITERAL", "$(HOME) and $$ and $x"}, {"NODE_RANK_COPY", "1"}};
  json c = air::k8s_manifests(w)[1]["spec"]["template"]["spec"]["containers"][0];
  // Kubernetes turns "$$" into "$" and expands "$(NAME)": both are doubled so the value arrives as written.
  CHECK(env_value(c, "LITERAL") == "$$(HOME) and $$$ and $x");
  std::string script = c["args"][0];
  CHECK(script.find("\"$$(cat /var/run/air/tokens/node-$NODE_RANK)\"") != std::string::npos);
  CHECK(script.find("exec air node --server \"$AIR_SERVER\"") != std::string::npos);
}

TEST_CASE("the YAML documents read back as the same objects") {
  for (auto flavor : {air::K8sFlavor::kIndexedJob, air::K8sFlavor::kJobSet}) {
    for (const char* example : {"multinode_llm_sft", "tiny_cpu"}) {
      air::Workload w = load(example);
      w.env_variables.push_back({"LOOKS_LIKE_A_NUMBER", "1"});
      w.env_variables.push_back({"LOOKS_LIKE_A_BOOL", "true"});
      for (const char* word : {"yes", "On", "NO", "y", "null", "~", "1e3", "0x1F", ".5", "-", "a: b", "#x", "x #y"})
        w.env_variables.push_back({std::string("WORD_") + std::to_string(w.env_variables.size()), word});
      w.env_variables.push_back({"MULTI_LINE", "first\n  indented\n\nlast\n\n"});
      w.env_variables.push_back({"QUOTES", "say \"hi\": #not a comment"});
      air::K8sOptions o;
      o.flavor = flavor;
      json objs = air::k8s_manifests(w, o);
      std::string yaml = air::k8s_yaml_documents(objs);
      INFO(yaml);
      std::vector<YAML::Node> docs = YAML::LoadAll(yaml);
      REQUIRE(docs.size() == objs.size());
      for (size_t i = 0; i < docs.size(); ++i) CHECK(yaml_to_json(docs[i]) == objs[i]);
    }
  }
  // A literal block for the multi-line entrypoint, so people can read it.
  std::string yaml = air::k8s_yaml_documents(air::k8s_manifests(load("tiny_cpu")));
  CHECK(yaml.find("args:\n") != std::string::npos);
  CHECK(yaml.find("- |\n") != std::string::npos);
  CHECK(yaml.rfind("---\napiVersion: v1\nkind: Service\n", 0) == 0);
  CHECK(yaml.find("value: \"2\"\n") != std::string::npos);  // NUM_NODES stays a string
}
