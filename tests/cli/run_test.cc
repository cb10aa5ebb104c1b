// `air run` in-process: exit code and stdout/stderr together for dry-runs, invalid workloads, overrides,
// field help and JSON output.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/app.h"

namespace fs = std::filesystem;

namespace {

const std::string kExamples = std::string(AIR_TEST_DATA_DIR) + "/../examples";
const std::string kReference = kExamples + "/multinode_llm_sft/train.yaml";

struct Result {
  int code;
  std::string out, err;
};

Result air_cli(std::vector<std::string> args) {
  // No workspace: the dry-run's secret check must not find a daemon someone left running in ~/.air.
  static const bool hermetic = [] {
    ::setenv("AIR_HOME", "/nonexistent/air-run-test-home", 1);
    ::setenv("AIR_CONFIG_FILE", "/nonexistent/air-run-test-config", 1);
    ::setenv("DATABRICKS_CONFIG_FILE", "/nonexistent/air-run-test-databrickscfg", 1);
    ::unsetenv("AIR_HOST");
    return true;
  }();
  (void)hermetic;
  args.insert(args.begin(), "air");
  std::ostringstream out, err;
  int code = air::cli::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& text) {
    path = fs::temp_directory_path() / ("air_run_test_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(reinterpret_cast<uintptr_t>(this)) + ".yaml");
    std::ofstream(path) << text;
  }
  ~TempFile() { fs::remove(path); }
};

}  // namespace

TEST_CASE("dry-run of the reference workload prints the plan and exits 0") {
  Result r = air_cli({"run", "-f", kReference, "--dry-run"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.err == "Dry run: configuration for \"air-multinode-llama-sft\" is valid; not submitting.\n");
  CHECK(r.out.rfind("Dry run: \"air-multinode-llama-sft\" is valid; nothing was submitted.\n", 0) == 0);
  CHECK(r.out.find("compute        2 nodes x 8 GPU per node (GPU_8xH100), 16 in all\n") != std::string::npos);
  CHECK(r.out.find("node 1 environment\n  NUM_NODES=2\n  NODE_RANK=1\n  LOCAL_WORLD_SIZE=8\n"
                   "  MASTER_ADDR=<node 0 address, at run time>\n  MASTER_PORT=<free port, per attempt>\n") !=
        std::string::npos);
  CHECK(r.out.find("  HF_TOKEN <- secret my_scope/hf_token\n") != std::string::npos);
  CHECK(r.out.find("  max_steps: 100\n") != std::string::npos);
  CHECK(r.out.find("  fsspec>=2024.6.1\n") != std::string::npos);
  CHECK(r.out.find("  largest files:\n") != std::string::npos);  // the snapshot manifest
}

TEST_CASE("dry-run without a running workspace says the secrets were not checked and still succeeds") {
  Result r = air_cli({"run", "-f", kReference, "--dry-run"});
  CHECK(r.code == 0);
  CHECK(r.out.find("\nSecrets: no workspace is running, so the secrets' existence was not checked (air run checks "
                   "it)\n") != std::string::npos);
  Result j = air_cli({"run", "-f", kReference, "--dry-run", "-o", "json"});
  CHECK(j.code == 0);
  auto doc = nlohmann::json::parse(j.out)["data"];
  CHECK(doc["secrets_check"]["checked"] == false);
  CHECK(doc["secrets_check"]["missing"].empty());
}

TEST_CASE("dry-run with -o json prints one JSON document") {
  Result r = air_cli({"run", "-f", kReference, "--dry-run", "-o", "json"});
  REQUIRE(r.code == 0);
  nlohmann::json env = nlohmann::json::parse(r.out);
  CHECK(env["v"] == 1);  // the reference's envelope
  nlohmann::json j = env["data"];
  CHECK(j["status"] == "DRY_RUN_OK");
  CHECK(j["dry_run"] == true);
  CHECK(j["compute"]["nodes"] == 2);
  REQUIRE(j["nodes"].size() == 2);
  CHECK(j["nodes"][1]["env"]["NODE_RANK"] == "1");
  CHECK(j["nodes"][0]["secrets"][0] == nlohmann::json({{"name", "HF_TOKEN"}, {"scope", "my_scope"}, {"key", "hf_token"}}));
  CHECK(j["code_source"]["snapshot"]["files"].get<int>() >= 1);
  CHECK(j["max_retries"] == 1);
  CHECK(j["timeout_minutes"] == 120);
}

TEST_CASE("an invalid workload exits 2 with every error on stderr and nothing on stdout") {
  TempFile f("experiment_name: demo\ncompute:\n    acelerator_type: GPU_8xH100\n    num_accelerators: 16\n"
             "command: python train.py\nmax_retries: -1\n");
  Result r = air_cli({"run", "-f", f.path.string(), "--dry-run"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  std::string file = f.path.string();
  CHECK(r.err == file + ":3:5: error: unknown key 'acelerator_type' in 'compute'\n"
                        "    acelerator_type: GPU_8xH100\n"
                        "    ^~~~~~~~~~~~~~~\n"
                        "  hint: did you mean 'accelerator_type'?\n" +
                    file + ":6:14: error: 'max_retries' must be >= 0, found -1\n"
                           "max_retries: -1\n"
                           "             ^~\n"
                           "  hint: use 0 to disable retries\n"
                           "air: 2 errors in " + file + "; nothing was submitted\n");
}

TEST_CASE("an invalid workload with -o json gives the error document on stdout") {
  TempFile f("experiment_name: demo\n");
  Result r = air_cli({"-o", "json", "run", "-f", f.path.string(), "--dry-run"});
  CHECK(r.code == 2);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["error"]["code"] == "INVALID_ARGS");
  CHECK(j["error"]["kind"] == "PERMANENT");
  CHECK(j["error"]["retryable"] == false);
  CHECK(j["error"]["diagnostics"].size() == 2);
  CHECK(j["error"]["diagnostics"][0]["message"] == "missing required top-level key 'compute'");
}

TEST_CASE("a missing file exits 2") {
  Result r = air_cli({"run", "-f", "/nonexistent/train.yaml", "--dry-run"});
  CHECK(r.code == 2);
  CHECK(r.err == "/nonexistent/train.yaml: error: no such file\n"
                 "  hint: check the path; it is relative to the current folder\n"
                 "air: 1 error in /nonexistent/train.yaml; nothing was submitted\n");
}

TEST_CASE("override flags change the plan and are reported") {
  Result r = air_cli({"run", "-f", kReference, "--dry-run", "--override", "compute.num_accelerators=32",
                      "--override", "env_variables.EXTRA=1"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("Override: changing compute.num_accelerators from 16 to 32\n"
                   "Override: setting env_variables.EXTRA to 1\n") != std::string::npos);
  CHECK(r.out.find("4 nodes x 8 GPU per node") != std::string::npos);
  CHECK(r.out.find("  EXTRA=1\n") != std::string::npos);
}

TEST_CASE("a bad --override exits 2 pointing at the argument") {
  Result r = air_cli({"run", "-f", kReference, "--dry-run", "--override", "compute.gpus=8"});
  CHECK(r.code == 2);
  CHECK(r.err == "--override:1:9: error: invalid --override: unknown field 'compute.gpus'\n"
                 "compute.gpus=8\n"
                 "        ^~~~\n"
                 "  hint: fields here: accelerator_type, num_accelerators, pool_id\n"
                 "air: 1 error in " + kReference + "; nothing was submitted\n");
}

TEST_CASE("run -h config.<path> prints field help without -f") {
  Result r = air_cli({"run", "-h", "config.compute.num_accelerators"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.rfind("config.compute.num_accelerators\n  type:        integer\n  required:    yes, when 'compute' is "
                    "set\n", 0) == 0);
  Result top = air_cli({"run", "-h", "config"});
  CHECK(top.code == 0);
  CHECK(top.out.find("Top-level keys:") != std::string::npos);
}

TEST_CASE("run -h config.<unknown> exits 2 with did-you-mean") {
  Result r = air_cli({"run", "-h", "config.comptue"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("air: error: unknown config field 'config.comptue'\n  hint: did you mean 'config.compute'? ", 0) == 0);
}

TEST_CASE("plain run -h still shows the verb's help") {
  Result r = air_cli({"run", "-h"});
  CHECK(r.code == 0);
  CHECK(r.out.find("--dry-run") != std::string::npos);
  CHECK(r.out.find("air run -h config.compute.accelerator_type") != std::string::npos);
}
