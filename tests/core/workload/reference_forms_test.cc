// Workload forms a user of Databricks' air writes (issue 28): the flat code_source of the public docs beside
// the nested one, environment.version as an int, max_retries' default, the MLflow run name's rule, and
// --override with spaces around the key.
#include <catch2/catch.hpp>

#include <string>

#include "core/workload/workload.h"

namespace {

air::ParseResult parse(const std::string& yaml, std::vector<std::string> overrides = {}) {
  air::ParseOptions opts;
  opts.check_paths = false;
  opts.overrides = std::move(overrides);
  return air::parse_workload_text(yaml, "train.yaml", "/tmp/proj", opts);
}

std::string rendered(const air::ParseResult& r) {
  return air::render_all(r.diagnostics, "train.yaml", "nothing was submitted");
}

const std::string kHead = R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
)";

}  // namespace

TEST_CASE("reference forms: the flat code_source {root_path: .} means a snapshot of that folder") {
  auto r = parse(kHead + "code_source:\n  root_path: src\n  include_paths: [train.py]\n  git: {commit: abc123}\n");
  INFO(rendered(r));
  REQUIRE(r.ok());
  const auto& cs = *r.workload->code_source;
  CHECK(cs.type == "snapshot");
  CHECK(cs.root_path == "src");
  CHECK(cs.root_path_resolved == "/tmp/proj/src");
  CHECK(cs.include_paths == std::vector<std::string>{"train.py"});
  REQUIRE(cs.git);
  CHECK(cs.git->commit == "abc123");
}

TEST_CASE("reference forms: the nested form is unchanged") {
  auto r = parse(kHead + "code_source:\n  type: snapshot\n  snapshot:\n    root_path: .\n");
  INFO(rendered(r));
  REQUIRE(r.ok());
  CHECK(r.workload->code_source->root_path_resolved == "/tmp/proj");
}

TEST_CASE("reference forms: mixing the flat and nested forms is one located error") {
  auto r = parse(kHead + "code_source:\n  type: snapshot\n  root_path: .\n");
  CHECK(rendered(r) == R"(train.yaml:6:3: error: 'code_source.root_path' is the flat form; this code_source also has 'type'
  root_path: .
  ^~~~~~~~~
  hint: use either 'root_path: ...' directly under code_source, or 'type: snapshot' with 'snapshot: {root_path: ...}'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("reference forms: the flat form needs root_path, the nested one type") {
  auto flat = parse(kHead + "code_source:\n  include_paths: [a]\n");
  CHECK(rendered(flat) == R"(train.yaml:4:1: error: missing required key 'root_path' in 'code_source'
code_source:
^~~~~~~~~~~
  hint: add 'root_path: .'
air: 1 error in train.yaml; nothing was submitted
)");
  auto nested = parse(kHead + "code_source:\n  snapshot: {root_path: .}\n");
  CHECK(rendered(nested) == R"(train.yaml:4:1: error: missing required key 'type' in 'code_source'
code_source:
^~~~~~~~~~~
  hint: add 'type: snapshot' (or the flat form: 'root_path: .')
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("reference forms: environment.version may be an int, max_retries defaults to 3") {
  auto r = parse(kHead + "environment:\n  version: 6\n  dependencies: [numpy]\n");
  INFO(rendered(r));
  REQUIRE(r.ok());
  CHECK(r.workload->environment.version == "6");
  CHECK(r.workload->max_retries == 3);
}

TEST_CASE("reference forms: mlflow_run_name follows experiment_name's character rule") {
  auto ok = parse(kHead + "mlflow_run_name: sft_llama-8b\n");
  REQUIRE(ok.ok());
  CHECK(ok.workload->mlflow_run_name == "sft_llama-8b");
  auto bad = parse(kHead + "mlflow_run_name: sft run\n");
  CHECK(rendered(bad) == R"(train.yaml:4:18: error: invalid mlflow_run_name 'sft run': only letters, digits, '_' and '-' are allowed
mlflow_run_name: sft run
                 ^~~~~~~
  hint: did you mean 'sft-run'?
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("reference forms: --override trims spaces around the key") {
  auto r = parse(kHead, {"timeout_minutes = 45", " max_retries=0"});
  INFO(rendered(r));
  REQUIRE(r.ok());
  CHECK(r.workload->timeout_minutes == 45);
  CHECK(r.workload->max_retries == 0);
  auto bad = parse(kHead, {" timout_minutes = 45"});
  CHECK(rendered(bad) == R"(--override:1:2: error: invalid --override: unknown field 'timout_minutes'
 timout_minutes = 45
 ^~~~~~~~~~~~~~
  hint: did you mean 'timeout_minutes'?
air: 1 error in train.yaml; nothing was submitted
)");
}
