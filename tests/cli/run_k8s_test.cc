// `air run --dry-run --backend k8s` in-process: the manifests on stdout (YAML, or a v1 List with -o json),
// nothing else there, and clear usage errors for what does not exist.
#include <catch2/catch.hpp>

#include <sstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "cli/app.h"

namespace {

const std::string kExamples = std::string(AIR_TEST_DATA_DIR) + "/../examples";
const std::string kReference = kExamples + "/multinode_llm_sft/train.yaml";
const std::string kTiny = kExamples + "/tiny_cpu/train.yaml";

struct Result {
  int code;
  std::string out, err;
};

Result air_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "air");
  std::ostringstream out, err;
  int code = air::cli::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("run --dry-run --backend k8s prints a Service and an Indexed Job as YAML") {
  Result r = air_cli({"run", "-f", kTiny, "--dry-run", "--backend", "k8s"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.rfind("# air run --dry-run --backend k8s: \"tiny-cpu-env\" is valid; nothing was submitted", 0) == 0);
  std::vector<YAML::Node> docs = YAML::LoadAll(r.out);
  REQUIRE(docs.size() == 2);
  CHECK(docs[0]["kind"].as<std::string>() == "Service");
  CHECK(docs[0]["spec"]["clusterIP"].as<std::string>() == "None");
  CHECK(docs[1]["kind"].as<std::string>() == "Job");
  CHECK(docs[1]["spec"]["completionMode"].as<std::string>() == "Indexed");
  CHECK(docs[1]["spec"]["completions"].as<int>() == 2);
  CHECK(docs[1]["spec"]["parallelism"].as<int>() == 2);
  CHECK(docs[1]["spec"]["activeDeadlineSeconds"].as<int>() == 300);
}

TEST_CASE("run --dry-run --backend k8s -o json prints one v1 List") {
  Result r = air_cli({"run", "-f", kReference, "--dry-run", "--backend", "k8s", "-o", "json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["apiVersion"] == "v1");
  CHECK(j["kind"] == "List");
  REQUIRE(j["items"].size() == 2);
  CHECK(j["items"][1]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8);
  CHECK(r.out.find("\"secretKeyRef\"") != std::string::npos);
}

TEST_CASE("run --dry-run --backend k8s --jobset prints one JobSet") {
  Result r = air_cli({"run", "-f", kReference, "--dry-run", "--backend", "k8s", "--jobset", "-o", "json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["items"].size() == 1);
  CHECK(j["items"][0]["kind"] == "JobSet");
  CHECK(j["items"][0]["spec"]["failurePolicy"]["maxRestarts"] == 1);
}

TEST_CASE("k8s backend without --dry-run is refused before anything is read or sent") {
  Result r = air_cli({"run", "-f", kTiny, "--backend", "k8s"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "air: error: air cannot submit to Kubernetes yet: only the dry-run exists for --backend k8s\n"
        "  hint: add --dry-run to print the manifests (docs/kubernetes.md); to run, use a workspace (the local "
        "backend, or air server --backend slurm)\n");
}

TEST_CASE("unknown backends and a stray --jobset are usage errors") {
  Result unknown = air_cli({"run", "-f", kTiny, "--dry-run", "--backend", "nomad"});
  CHECK(unknown.code == 2);
  CHECK(unknown.out.empty());
  Result stray = air_cli({"run", "-f", kTiny, "--dry-run", "--jobset"});
  CHECK(stray.code == 2);
  CHECK(stray.out.empty());
  CHECK(stray.err.find("--jobset only applies with --backend k8s") != std::string::npos);
}

TEST_CASE("an invalid workload with --backend k8s exits 2 with its diagnostics and no manifest") {
  Result r = air_cli({"run", "-f", kTiny, "--dry-run", "--backend", "k8s", "--override", "compute.num_accelerators=3"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("error:") != std::string::npos);
}
