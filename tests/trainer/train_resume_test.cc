// Resumption inside air-train's loop: an attempt that dies after step k leaves sharded checkpoints in
// output_dir/sharded, and the same command run again continues from the newest complete one: the loss of
// every later step equals that of one uninterrupted run (within 1e-4 relative), at world sizes 1 and 2
// (real processes: air-train, and air-torchrun over Gloo). A half-written checkpoint is never picked.
#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "tests/trainer/train_process.h"

namespace fs = std::filesystem;

namespace {

using Attempt = air::train::testing::TrainAttempt;

// Runs air-train (world 1) or air-torchrun with `world` ranks over the tiny model, writing to out.
Attempt attempt(int world, const fs::path& out, const std::string& env = "", const std::string& extra = "") {
  const std::string src = AIR_SOURCE_DIR;
  // Global batch 4 rows at every world size; several epochs of the example data in 8 steps.
  std::string cmd = "OMP_NUM_THREADS=1 " + env + " " + air::train::testing::train_launcher(world) +
                    " --set model_name=" + src +
                    "/examples/tiny_model --set dataset_name=" + src +
                    "/examples/data/alpaca_tiny.json --set init=random --set max_seq_len=64 --set packing=true"
                    " --set per_device_batch_size=" + std::to_string(4 / world) +
                    " --set gradient_accumulation_steps=1 --set learning_rate=2e-2 --set warmup_steps=2"
                    " --set lr_schedule=cosine --set max_steps=8 --set max_examples=40 --set seed=11"
                    " --set checkpoint_every_steps=3 --set output_dir=" + out.string() + " " + extra;
  return air::train::testing::run_train_command(cmd);
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("air_resume_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

void check_resume(int world) {
  const fs::path root = temp_dir("w" + std::to_string(world));
  Attempt whole = attempt(world, root / "whole");
  INFO(whole.output);
  REQUIRE(whole.code == 0);
  REQUIRE(whole.losses.size() == 8);
  REQUIRE(whole.losses[8] < 0.9 * whole.losses[1]);  // it trains: the comparison is not between constants

  // The first attempt dies right after step 4: the checkpoint of step 3 is the newest complete one.
  const fs::path out = root / "retried";
  Attempt first = attempt(world, out, "AIR_TRAIN_EXIT_AFTER_STEP=4");
  INFO(first.output);
  REQUIRE(first.code == 3);
  REQUIRE(first.losses.size() == 4);
  REQUIRE(fs::exists(out / "sharded" / "latest"));
  REQUIRE(fs::exists(out / "sharded" / "step-00000003" / "state.json"));
  // A save that crashed half-way: a step folder newer than `latest` with a rank file and no state.json.
  fs::create_directories(out / "sharded" / "step-00000007");
  std::ofstream(out / "sharded" / "step-00000007" / "rank-00000-of-00001.safetensors") << "trunc";

  Attempt second = attempt(world, out);
  INFO(second.output);
  REQUIRE(second.code == 0);
  CHECK(second.output.find("resumed from " + (out / "sharded" / "step-00000003").string() + " at step 3") !=
        std::string::npos);
  REQUIRE(second.losses.size() == 5);  // steps 4..8 only: it did not start over
  for (int step = 4; step <= 8; ++step) {
    INFO("step " << step << ": resumed " << second.losses[step] << ", uninterrupted " << whole.losses[step]);
    CHECK(std::abs(second.losses[step] - whole.losses[step]) <= 1e-4 * std::abs(whole.losses[step]));
  }
  // The consolidated checkpoint replaced output_dir and the sharded ones were carried over; the
  // half-written folder was pruned by the next save.
  CHECK(fs::exists(out / "config.json"));
  CHECK(fs::exists(out / "model.safetensors"));
  CHECK(fs::exists(out / "sharded" / "step-00000008" / "state.json"));
  CHECK_FALSE(fs::exists(out / "sharded" / "step-00000007"));
  fs::remove_all(root);
}

}  // namespace

TEST_CASE("train: a retried attempt resumes from the newest complete sharded checkpoint (world 1)") {
  check_resume(1);
}

TEST_CASE("train: a retried attempt resumes from the newest complete sharded checkpoint (world 2)") {
  check_resume(2);
}

TEST_CASE("train: resume naming a folder without a checkpoint is a clear error") {
  const fs::path root = temp_dir("missing");
  Attempt a = attempt(1, root / "out", "", "--set resume=" + (root / "nothing").string());
  INFO(a.output);
  CHECK(a.code == 1);
  CHECK(a.output.find("air-train: error: resume: no sharded checkpoint in " + (root / "nothing").string()) !=
        std::string::npos);
  CHECK(a.losses.empty());
  fs::remove_all(root);
}
