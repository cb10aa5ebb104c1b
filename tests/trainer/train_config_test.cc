// air-train's configuration: YAML keys, located errors with did-you-mean, --set overrides, validation.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include "core/base/error.h"
#include "trainer/config.h"

using namespace air::train;

TEST_CASE("train config: the reference's parameters block reads into the typed config") {
  TrainConfig c;
  apply_yaml(c, R"(model_name: meta-llama/Llama-3.1-8B
dataset_name: tatsu-lab/alpaca
max_seq_len: 1024
per_device_batch_size: 4
gradient_accumulation_steps: 2
learning_rate: 0.00002
max_steps: 100
output_dir: /Volumes/main/default/air_checkpoints/llama31-8b-sft
betas: [0.9, 0.95]
packing: true
)", "params.yaml");
  REQUIRE(c.model_name == "meta-llama/Llama-3.1-8B");
  REQUIRE(c.learning_rate == Approx(2e-5));
  REQUIRE(c.betas[1] == Approx(0.95));
  REQUIRE(c.packing);
  REQUIRE(c.origin.at("max_steps") == "params.yaml:7");
  REQUIRE_NOTHROW(validate(c));
  std::string shown = render_config(c);
  REQUIRE(shown.find("  learning_rate               2e-05  (params.yaml:6)\n") != std::string::npos);
  REQUIRE(shown.find("  seed                        42  (default)\n") != std::string::npos);
}

TEST_CASE("train config: unknown keys and bad values are reported together, located, with a hint") {
  TrainConfig c;
  try {
    apply_yaml(c, "model_name: m\nlearning_rat: 0.1\nmax_steps: ten\ndtype: fp64\n", "p.yaml");
    FAIL("expected an error");
  } catch (const air::Error& e) {
    REQUIRE(std::string(e.what()) ==
            "p.yaml:2:1: error: unknown key 'learning_rat'\n"
            "    learning_rat: 0.1\n"
            "    ^~~~~~~~~~~~\n"
            "  hint: did you mean 'learning_rate'?\n"
            "p.yaml:3:12: error: 'max_steps': expected an integer, got 'ten'\n"
            "    max_steps: ten\n"
            "               ^\n"
            "p.yaml:4:8: error: 'dtype': 'fp64' is not one of: auto, bf16, fp32\n"
            "    dtype: fp64\n"
            "           ^\n"
            "air-train: 3 errors in p.yaml; nothing was run");
    REQUIRE(e.exit_code() == 2);
  }
}

TEST_CASE("train config: duplicate keys are errors, not silently the first") {
  TrainConfig c;
  REQUIRE_THROWS_WITH(apply_yaml(c, "max_steps: 1\nmax_steps: 2\n", "p.yaml"), Catch::Contains("p.yaml:2:1: error: duplicate key 'max_steps'"));
}

TEST_CASE("train config: --set overrides the file and is checked the same way") {
  TrainConfig c;
  apply_yaml(c, "max_steps: 5\n", "p.yaml");
  apply_override(c, "max_steps=7");
  apply_override(c, "betas=[0.8, 0.9]");
  apply_override(c, "output_dir=/tmp/x=y");
  REQUIRE(c.max_steps == 7);
  REQUIRE(c.betas[0] == Approx(0.8));
  REQUIRE(c.output_dir == "/tmp/x=y");
  REQUIRE(c.origin.at("max_steps") == "--set");
  REQUIRE_THROWS_WITH(apply_override(c, "max_stpes=3"), Catch::Contains("unknown key 'max_stpes'"));
  try {
    apply_override(c, "max_stpes=3");
  } catch (const air::Error& e) {
    REQUIRE(e.hint() == "did you mean 'max_steps'?");
  }
  REQUIRE_THROWS_WITH(apply_override(c, "packing=maybe"), Catch::Contains("--set packing: expected true or false"));
  REQUIRE_THROWS_WITH(apply_override(c, "noequals"), Catch::Contains("key=value"));
}

TEST_CASE("train config: validation names every problem") {
  TrainConfig c;
  c.per_device_batch_size = 0;
  c.max_shard_size = "lots";
  try {
    validate(c);
    FAIL("expected an error");
  } catch (const air::Error& e) {
    std::string m = e.what();
    REQUIRE(m.find("model_name is required") != std::string::npos);
    REQUIRE(m.find("per_device_batch_size must be at least 1") != std::string::npos);
    REQUIRE(m.find("cannot read 'lots' as a size") != std::string::npos);
  }
  REQUIRE(parse_size("5GB") == 5000000000ull);
  REQUIRE(parse_size("2 MiB") == 2097152ull);
  REQUIRE(parse_size("1000") == 1000ull);
}

TEST_CASE("train config: precision fp8 is opt-in, checked, and located when misspelt") {
  TrainConfig c;
  REQUIRE(c.precision == "bf16");
  apply_yaml(c, "model_name: m\ndataset_name: d\nprecision: fp8\nfp8_scaling: rowwise\n", "p.yaml");
  REQUIRE(c.precision == "fp8");
  REQUIRE(c.fp8_scaling == "rowwise");
  REQUIRE_NOTHROW(validate(c));
  try {
    TrainConfig bad;
    apply_yaml(bad, "model_name: m\nprecision: fp4\n", "p.yaml");
    FAIL("expected an error");
  } catch (const air::Error& e) {
    REQUIRE(std::string(e.what()).find("p.yaml:2:12: error: 'precision': 'fp4' is not one of: bf16, fp8") == 0);
    REQUIRE(e.exit_code() == 2);
  }
  apply_override(c, "dtype=fp32");
  try {
    validate(c);
    FAIL("expected an error");
  } catch (const air::Error& e) {
    REQUIRE(std::string(e.what()).find("invalid configuration: precision: fp8 computes in bf16") != std::string::npos);
  }
}

TEST_CASE("train config: datasets: is a mixture of named datasets, checked entry by entry") {
  TrainConfig c;
  apply_yaml(c, R"(model_name: m
datasets:
  - {name: a.jsonl, weight: 3}
  - name: org/chat
    format: sharegpt
    split: validation
  - b.parquet
)", "p.yaml");
  REQUIRE(c.datasets.size() == 3);
  CHECK(c.datasets[0].name == "a.jsonl");
  CHECK(c.datasets[0].weight == Approx(3));
  CHECK(c.datasets[0].format.empty());
  CHECK(c.datasets[1].format == "sharegpt");
  CHECK(c.datasets[1].split == "validation");
  CHECK(c.datasets[1].weight == Approx(1));
  CHECK(c.datasets[2].name == "b.parquet");
  CHECK(c.datasets[2].split == "train");
  REQUIRE_NOTHROW(validate(c));
  CHECK(render_config(c).find("a.jsonl (weight 3), org/chat (weight 1, sharegpt, split validation), b.parquet (weight 1)") !=
        std::string::npos);
  try {
    TrainConfig d;
    apply_yaml(d, "model_name: m\ndatasets:\n  - {name: a.jsonl, wieght: 2}\n", "q.yaml");
    FAIL("expected an error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()).find("q.yaml:3:3: error: 'datasets': entry 1: unknown key 'wieght' (did you mean 'weight'?)") == 0);
  }
  CHECK_THROWS_WITH(apply_yaml(c, "datasets: [{name: a, weight: -1}]\n", "r.yaml"),
                    Catch::Contains("'datasets': entry 1: weight must be positive, got '-1'"));
  TrainConfig both;
  apply_yaml(both, "model_name: m\ndataset_name: x.jsonl\ndatasets: [y.jsonl]\n", "s.yaml");
  CHECK_THROWS_WITH(validate(both), Catch::Contains("set dataset_name or datasets:, not both"));
}
