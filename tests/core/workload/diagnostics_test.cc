// The rendered diagnostics of the workload parser are a contract: each case compares the whole text
// (source line and caret included) for one kind of mistake.
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

TEST_CASE("diagnostic: unknown key with typo") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
    acelerator_type: GPU_8xH100
    num_accelerators: 16
command: python train.py
)") ==
        R"(train.yaml:3:5: error: unknown key 'acelerator_type' in 'compute'
    acelerator_type: GPU_8xH100
    ^~~~~~~~~~~~~~~
  hint: did you mean 'accelerator_type'?
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: unknown top level key belongs elsewhere") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 16
accelerator_type: GPU_8xH100
command: python train.py
)") ==
        R"(train.yaml:5:1: error: unknown top-level key 'accelerator_type'
accelerator_type: GPU_8xH100
^~~~~~~~~~~~~~~~
  hint: 'accelerator_type' belongs under 'compute'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: unknown top level key without match") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 16
command: python train.py
priority: high
)") ==
        R"(train.yaml:6:1: error: unknown top-level key 'priority'
priority: high
^~~~~~~~
  hint: valid keys at the top level: experiment_name, compute, environment, code_source, command, env_variables, secrets, parameters, max_retries, timeout_minutes, stall_timeout_minutes, straggler_minutes, system_metrics_interval, step_pattern, priority_class, idempotency_token, mlflow_run_name, mlflow_experiment_directory, permissions, usage_policy_name, usage_policy_id
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: duplicate key") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 16
command: python train.py
experiment_name: again
)") ==
        R"(train.yaml:6:1: error: duplicate key 'experiment_name' (first defined at line 1)
experiment_name: again
^~~~~~~~~~~~~~~
  hint: keys must be unique within a mapping; remove or merge one of them
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: duplicate key in parameters") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 16
command: python train.py
parameters:
  lr: 0.1
  lr: 0.2
)") ==
        R"(train.yaml:8:3: error: duplicate key 'lr' (first defined at line 7)
  lr: 0.2
  ^~
  hint: keys must be unique within a mapping; remove or merge one of them
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: tab in indentation") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
	accelerator_type: GPU_8xH100
command: python train.py
)") ==
        R"(train.yaml:3:1: error: tab character in indentation
	accelerator_type: GPU_8xH100
^
  hint: YAML indents with spaces only; replace the tab with spaces
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: over indented key") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
    num_accelerators: 16
command: python train.py
)") ==
        R"(train.yaml:4:5: error: unexpected indentation: this line is indented more than line 3 but nothing there opens a nested block
    num_accelerators: 16
    ^~~~~~~~~~~~~~~~
  hint: indent it by 2 spaces like the line before, or end the line before with ':'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: unclosed flow sequence") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
environment:
  dependencies: [numpy, torch
command: python train.py
)") ==
        R"(train.yaml:4:17: error: this '[' is never closed
  dependencies: [numpy, torch
                ^
  hint: close the list with ']' (or add the missing ',')
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: bad escape") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: "python \q.py"
)") ==
        R"(train.yaml:3:20: error: unknown escape sequence '\q' in a double-quoted string
command: "python \q.py"
                   ^~~~
  hint: use single quotes, or write '\\' for a backslash
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: value with colon space") {
  CHECK(diagnose(R"(experiment_name: demo: v2
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
)") ==
        R"(train.yaml:1:22: error: unexpected ':' here: a mapping value is not allowed in this position
experiment_name: demo: v2
                     ^
  hint: if the value itself contains ': ', put it in quotes
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: quoted integer") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: "16"
command: python train.py
)") ==
        R"(train.yaml:4:21: error: 'compute.num_accelerators' must be an integer, found the quoted string "16"
  num_accelerators: "16"
                    ^~~~
  hint: remove the quotes
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: float into integer") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
timeout_minutes: 1.5
)") ==
        R"(train.yaml:4:18: error: 'timeout_minutes' must be an integer (a whole number), found the number 1.5
timeout_minutes: 1.5
                 ^~~
  hint: air does not round numbers; write a whole number
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: word into integer") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: sixteen
command: python train.py
)") ==
        R"(train.yaml:4:21: error: 'compute.num_accelerators' must be an integer, found the string 'sixteen'
  num_accelerators: sixteen
                    ^~~~~~~
  hint: write a whole number such as 8
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: integer out of range") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
max_retries: 99999999999
)") ==
        R"(train.yaml:4:14: error: 'max_retries' is out of range: 99999999999
max_retries: 99999999999
             ^~~~~~~~~~~
  hint: use a value below 2147483648
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: accelerator case mismatch") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xh100
  num_accelerators: 16
command: python train.py
)") ==
        R"(train.yaml:3:21: error: unknown accelerator type 'GPU_8xh100'
  accelerator_type: GPU_8xh100
                    ^~~~~~~~~~
  hint: did you mean 'GPU_8xH100'? (names are case-sensitive)
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: accelerator unknown") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: TPU_v5
  num_accelerators: 16
command: python train.py
)") ==
        R"(train.yaml:3:21: error: unknown accelerator type 'TPU_v5'
  accelerator_type: TPU_v5
                    ^~~~~~
  hint: valid types: GPU_1xA10, GPU_1xH100, GPU_8xH100, GPU_1xH200, GPU_8xH200, CPU_1xHOST, CPU_2xHOST, CPU_4xHOST, CPU_8xHOST
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: accelerators not multiple") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 12
command: python train.py
)") ==
        R"(train.yaml:4:21: error: 'compute.num_accelerators' must be a multiple of 8 for GPU_8xH100 (8 per node), found 12
  num_accelerators: 12
                    ^~
  hint: use 8 (1 node) or 16 (2 nodes)
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: accelerators zero") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 0
command: python train.py
)") ==
        R"(train.yaml:4:21: error: 'compute.num_accelerators' must be positive, found 0
  num_accelerators: 0
                    ^
  hint: GPU_8xH100 has 8 per node; use a multiple of it
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: missing compute key") {
  CHECK(diagnose(R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
command: python train.py
)") ==
        R"(train.yaml:2:1: error: missing required key 'num_accelerators' in 'compute'
compute:
^~~~~~~
  hint: add 'num_accelerators: <integer>'
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: missing top level keys") {
  CHECK(diagnose(R"(experiment_name: demo
parameters:
  lr: 1
)") ==
        R"(train.yaml: error: missing required top-level key 'compute'
  hint: add 'compute: <object>'
train.yaml: error: missing required top-level key 'command'
  hint: add 'command: <string>'
air: 2 errors in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: compute not a mapping") {
  CHECK(diagnose(R"(experiment_name: demo
compute: GPU_8xH100
command: python train.py
)") ==
        R"(train.yaml:2:10: error: 'compute' must be a mapping with keys accelerator_type, num_accelerators, pool_id, found the string 'GPU_8xH100'
compute: GPU_8xH100
         ^~~~~~~~~~
  hint: indent its keys under it, one 'key: value' per line
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: experiment name bad chars") {
  CHECK(diagnose(R"(experiment_name: my experiment!
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
)") ==
        R"(train.yaml:1:18: error: invalid experiment_name 'my experiment!': only letters, digits, '_' and '-' are allowed
experiment_name: my experiment!
                 ^~~~~~~~~~~~~~
  hint: did you mean 'my-experiment'?
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: experiment name too long") {
  CHECK(diagnose(R"(experiment_name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: python train.py
)") ==
        R"(train.yaml:1:18: error: 'experiment_name' is 101 characters long; the maximum is 100
experiment_name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
                 ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: empty command") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command: "   "
)") ==
        R"(train.yaml:3:1: error: 'command' is empty
command: "   "
^~~~~~~
  hint: give the shell command to run on every node
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: command as list") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
command:
  - python
  - train.py
)") ==
        R"(train.yaml:4:3: error: 'command' must be a string, found a list
  - python
  ^
  hint: write a multi-line command as a block: 'command: |' followed by indented lines
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: bad requirement operator") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
environment:
  dependencies:
    - torch=2.1
command: python train.py
)") ==
        R"(train.yaml:5:12: error: invalid requirement 'torch=2.1': '=' is not a version operator
    - torch=2.1
           ^
  hint: use '==' to pin a version
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("diagnostic: bad requirement marker") {
  CHECK(diagnose(R"(experiment_name: demo
compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}
environment:
  dependencies:
    - "numpy; pyversion >= '3.10'"
command: python train.py
)") ==
        R"(train.yaml:5:15: error: invalid requirement 'numpy; pyversion >= '3.10'': unknown marker variable 'pyversion'
    - "numpy; pyversion >= '3.10'"
              ^~~~~~~~~
  hint: use python_version, sys_platform, platform_machine, ... or quote a literal value
air: 1 error in train.yaml; nothing was submitted
)");
}

