// The rendered diagnostics of the workload's semantic rules (and of hostile bytes) are a contract: each
// case compares the whole text, source line and caret included.
#include <catch2/catch.hpp>

#include "core/base/diagnostics.h"
#include "core/workload/workload.h"

namespace {

std::string diagnose(const std::string& yaml) {
  air::ParseOptions opts;
  opts.check_paths = false;
  air::ParseResult r = air::parse_workload_text(yaml, "train.yaml", "/tmp", opts);
  return air::render_all(r.diagnostics, "train.yaml", "nothing was submitted");
}

}  // namespace

TEST_CASE("diagnostic: dependencies as string") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
environment:
  dependencies: numpy
command: python train.py
)") ==
        R"(train.yaml:4:17: error: 'environment.dependencies' must be a list of strings, found the string 'numpy'
  dependencies: numpy
                ^~~~~
  hint: write it as a list: 'dependencies:' then '  - numpy' on the next line
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: version without dependencies") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
environment:
  version: '4'
command: python train.py
)") ==
        R"(train.yaml:4:3: error: 'environment.version' needs 'dependencies' beside it
  version: '4'
  ^~~~~~~
  hint: add 'dependencies:' with the packages to install, or remove 'version'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: docker with dependencies") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
environment:
  dependencies: [numpy]
  docker_image:
    url: example.com/img:1
    tag_policy: sometimes
command: python train.py
)") ==
        R"(train.yaml:5:3: error: 'docker_image' cannot be combined with 'dependencies' or 'version' in 'environment'
  docker_image:
  ^~~~~~~~~~~~
  hint: install packages in the image, or drop docker_image
train.yaml:7:17: error: 'docker_image.tag_policy' must be 'auto' or 'latest', found 'sometimes'
    tag_policy: sometimes
                ^~~~~~~~~
air: 2 errors in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: bad env variable name") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
env_variables:
  MY-VAR: 1
)") ==
        R"(train.yaml:5:3: error: invalid environment variable name 'MY-VAR'
  MY-VAR: 1
  ^~~~~~
  hint: names use letters, digits and '_' and do not start with a digit
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: reserved env variable") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
env_variables:
  NODE_RANK: 3
)") ==
        R"(train.yaml:5:3: error: 'NODE_RANK' is set by air on every node; it cannot be set in env_variables
  NODE_RANK: 3
  ^~~~~~~~~
  hint: choose another name
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: env variable without value") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
env_variables:
  FOO:
)") ==
        R"(train.yaml:5:3: error: 'env_variables.FOO' has no value
  FOO:
  ^~~
  hint: write '""' for an empty value
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: secret without slash") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
secrets:
  HF_TOKEN: hf_token
)") ==
        R"(train.yaml:5:13: error: invalid secret reference 'hf_token' for 'HF_TOKEN': expected scope/key with exactly one '/'
  HF_TOKEN: hf_token
            ^~~~~~~~
  hint: for example 'my_scope/hf_token'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: secret empty part") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
secrets:
  HF_TOKEN: my_scope/
)") ==
        R"(train.yaml:5:13: error: invalid secret reference 'my_scope/' for 'HF_TOKEN': the scope and the key must both be non-empty
  HF_TOKEN: my_scope/
            ^~~~~~~~~
  hint: for example 'my_scope/hf_token'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: env secret clash") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
env_variables:
  HF_TOKEN: abc
secrets:
  HF_TOKEN: my_scope/hf_token
)") ==
        R"(train.yaml:7:3: error: 'HF_TOKEN' is set in both env_variables (line 5) and secrets
  HF_TOKEN: my_scope/hf_token
  ^~~~~~~~
  hint: remove it from one of them
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: code source wrong type") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
code_source:
  type: git
  snapshot:
    root_path: .
)") ==
        R"(train.yaml:5:9: error: 'code_source.type' must be 'snapshot', found 'git'
  type: git
        ^~~
  hint: write 'type: snapshot'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: code source missing snapshot") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
code_source:
  type: snapshot
)") ==
        R"(train.yaml:4:1: error: missing required key 'snapshot' in 'code_source'
code_source:
^~~~~~~~~~~
  hint: add 'snapshot: <object>'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: include paths bad") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
code_source:
  type: snapshot
  snapshot:
    root_path: .
    include_paths:
      - /etc
      - src/../../secret
)") ==
        R"(train.yaml:9:9: error: 'include_paths' entries must be relative to root_path, found '/etc'
      - /etc
        ^~~~
train.yaml:10:9: error: 'include_paths' entries cannot contain '..', found 'src/../../secret'
      - src/../../secret
        ^~~~~~~~~~~~~~~~
air: 2 errors in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: git branch and commit") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
code_source:
  type: snapshot
  snapshot:
    root_path: .
    git:
      branch: main
      commit: abc1234
)") ==
        R"(train.yaml:8:5: error: 'git': 'branch' and 'commit' are mutually exclusive
    git:
    ^~~
  hint: keep only one of them
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: negative retries") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
max_retries: -1
)") ==
        R"(train.yaml:4:14: error: 'max_retries' must be >= 0, found -1
max_retries: -1
             ^~
  hint: use 0 to disable retries
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: idempotency token too long") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
idempotency_token: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
)") ==
        R"(train.yaml:4:20: error: 'idempotency_token' is 71 characters long; the maximum is 64
idempotency_token: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                   ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: mlflow directory outside workspace") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
mlflow_experiment_directory: /Users/me/exp
)") ==
        R"(train.yaml:4:30: error: 'mlflow_experiment_directory' must start with '/Workspace', found '/Users/me/exp'
mlflow_experiment_directory: /Users/me/exp
                             ^~~~~~~~~~~~~
  hint: for example /Workspace/Users/me@example.com/experiments
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: permissions two principals") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
permissions:
  - user_name: a@example.com
    group_name: admins
    level: CAN_VIEW
)") ==
        R"(train.yaml:5:5: error: permissions[0]: only one of 'user_name', 'group_name' or 'service_principal_name' may be given
  - user_name: a@example.com
    ^
  hint: split it into one entry per principal
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: usage policy bad uuid") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
usage_policy_id: not-a-uuid
)") ==
        R"(train.yaml:4:18: error: 'usage_policy_id' must be a UUID, found 'not-a-uuid'
usage_policy_id: not-a-uuid
                 ^~~~~~~~~~
  hint: for example 12345678-90ab-cdef-1234-567890abcdef; to use a name, set usage_policy_name
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: usage policy both") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
usage_policy_name: team
usage_policy_id: 12345678-90ab-cdef-1234-567890abcdef
)") ==
        R"(train.yaml:5:1: error: 'usage_policy_name' and 'usage_policy_id' are mutually exclusive
usage_policy_id: 12345678-90ab-cdef-1234-567890abcdef
^~~~~~~~~~~~~~~
  hint: set only one
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: top level list") {
  CHECK(diagnose(R"(- experiment_name: demo
)") ==
        R"(train.yaml:1:1: error: the top level must be a mapping of keys (experiment_name, compute, command, ...), found a list
- experiment_name: demo
^
  hint: start the file with 'experiment_name: ...'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: multiple documents") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
---
experiment_name: other
)") ==
        R"(train.yaml:4:1: error: the file holds more than one YAML document; a workload is a single document
---
^~~
  hint: remove the '---' separator and the documents after the first
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: unknown alias") {
  CHECK(diagnose(R"(experiment_name: *name
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
)") ==
        R"(train.yaml:1:18: error: alias refers to an anchor that is not defined before it
experiment_name: *name
                 ^~~~~
  hint: define the anchor ('&name') before using the alias ('*name')
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: unsupported tag") {
  CHECK(diagnose(R"(experiment_name: !custom demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
)") ==
        R"(train.yaml:1:18: error: unsupported YAML tag '!custom'
experiment_name: !custom demo
                 ^~~~~~~~~~~~
  hint: remove the tag; air reads plain values
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: invalid utf8") {
  CHECK(diagnose("experiment_name: caf\xe9""\n"
    "compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}\n"
    "command: python train.py\n"
    "") ==
        "train.yaml:1:21: error: invalid UTF-8: byte 0xE9 is not valid here\n"
    "experiment_name: caf\xe9""\n"
    "                    ^\n"
    "  hint: save the file as UTF-8\n"
    "air: 1 error in train.yaml; nothing was submitted\n"
    "");
}

TEST_CASE("diagnostic: control character") {
  CHECK(diagnose("experiment_name: demo\x01""\n"
    "compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}\n"
    "command: python train.py\n"
    "") ==
        "train.yaml:1:22: error: control character U+0001 is not allowed in YAML\n"
    "experiment_name: demo\x01""\n"
    "                     ^\n"
    "  hint: remove it; only tab, newline and carriage return may appear\n"
    "air: 1 error in train.yaml; nothing was submitted\n"
    "");
}

TEST_CASE("diagnostic: parameters not a mapping") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
parameters: [1, 2]
)") ==
        R"(train.yaml:4:13: error: 'parameters' must be a mapping of names to values, found a list
parameters: [1, 2]
            ^
  hint: write it as 'name: value' lines indented under the key
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: many errors at once") {
  CHECK(diagnose(R"(experiment_name: ""
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 10
command: ""
max_retries: -2
timeout_minutes: 0
)") ==
        R"(train.yaml:1:1: error: 'experiment_name' is empty
experiment_name: ""
^~~~~~~~~~~~~~~
  hint: use letters, digits, '_' and '-'
train.yaml:4:21: error: 'compute.num_accelerators' must be a multiple of 8 for GPU_8xH100 (8 per node), found 10
  num_accelerators: 10
                    ^~
  hint: use 8 (1 node) or 16 (2 nodes)
train.yaml:5:1: error: 'command' is empty
command: ""
^~~~~~~
  hint: give the shell command to run on every node
train.yaml:6:14: error: 'max_retries' must be >= 0, found -2
max_retries: -2
             ^~
  hint: use 0 to disable retries
train.yaml:7:18: error: 'timeout_minutes' must be >= 1, found 0
timeout_minutes: 0
                 ^
  hint: remove it for no timeout
air: 5 errors in train.yaml; nothing was submitted
)");
}


TEST_CASE("stall_timeout_minutes: a number >= 0, fractions allowed, 0 turns it off", "[workload][stall]") {
  auto ok = air::parse_workload_text(
      "experiment_name: s\ncompute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}\ncommand: x\n"
      "stall_timeout_minutes: 0.25\n",
      "t.yaml", "/", [] { air::ParseOptions o; o.check_paths = false; return o; }());
  REQUIRE(ok.ok());
  CHECK(*ok.workload->stall_timeout_minutes == 0.25);
  auto off = air::parse_workload_text(
      "experiment_name: s\ncompute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}\ncommand: x\n"
      "stall_timeout_minutes: 0\n",
      "t.yaml", "/", [] { air::ParseOptions o; o.check_paths = false; return o; }());
  REQUIRE(off.ok());
  CHECK(*off.workload->stall_timeout_minutes == 0.0);
  for (const char* bad : {"-1", "'5'", "[1]", "soon"}) {
    auto r = air::parse_workload_text(
        std::string("experiment_name: s\ncompute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}\n"
                    "command: x\nstall_timeout_minutes: ") + bad + "\n",
        "t.yaml", "/", [] { air::ParseOptions o; o.check_paths = false; return o; }());
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.diagnostics.at(0).message.find("'stall_timeout_minutes' must be") != std::string::npos);
    CHECK(r.diagnostics.at(0).line == 4);
  }
}

TEST_CASE("health keys: straggler_minutes, system_metrics_interval, step_pattern", "[workload][stall]") {
  auto parse = [](const std::string& extra) {
    return air::parse_workload_text(
        "experiment_name: s\ncompute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}\ncommand: x\n" + extra,
        "t.yaml", "/", [] { air::ParseOptions o; o.check_paths = false; return o; }());
  };
  auto defaults = parse("");
  REQUIRE(defaults.ok());
  CHECK(defaults.workload->system_metrics_interval == 10.0);
  CHECK_FALSE(defaults.workload->straggler_minutes);
  CHECK(defaults.workload->step_pattern.empty());
  auto set = parse("straggler_minutes: 0.5\nsystem_metrics_interval: 0.2\nstep_pattern: 'it=(\\d+)'\n");
  REQUIRE(set.ok());
  CHECK(*set.workload->straggler_minutes == 0.5);
  CHECK(set.workload->system_metrics_interval == 0.2);
  CHECK(set.workload->step_pattern == "it=(\\d+)");
  auto bad = parse("system_metrics_interval: -1\nstep_pattern: 'it=\\d+'\n");
  REQUIRE(bad.diagnostics.size() == 2);
  CHECK(bad.diagnostics[0].message == "'system_metrics_interval' must be >= 0, found -1");
  CHECK(bad.diagnostics[1].message == "'step_pattern' has no group");
  CHECK(bad.diagnostics[1].line == 5);
  auto broken = parse("step_pattern: '(unclosed'\n");
  REQUIRE(broken.diagnostics.size() == 1);
  CHECK(broken.diagnostics[0].message.find("'step_pattern' is not a valid regular expression") == 0);
}
