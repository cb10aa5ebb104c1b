// Issue 30 on Slurm: compute.pool_id picks a partition and priority_class a QOS or nice value, both from
// server.conf; the scheduler's own keys ([pools], [scheduler]) are read and checked there too.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/base/error.h"
#include "server/backends/slurm.h"
#include "server/workspace/config.h"

using namespace air::server;

namespace {

std::vector<std::string> scheduling_args(const std::string& pool, const std::string& cls, const SlurmOptions& o) {
  AttemptLaunch l;
  l.run_id = "ab12cd34";
  l.attempt_dir = "/srv/air/runs/ab12cd34/attempt_1";
  l.pool = pool;
  l.priority_class = cls;
  std::vector<std::string> out;
  for (const auto& a : sbatch_argv(l, o, "s.sh"))
    if (a.rfind("--partition", 0) == 0 || a.rfind("--qos", 0) == 0 || a.rfind("--nice", 0) == 0) out.push_back(a);
  return out;
}

}  // namespace

TEST_CASE("slurm: pool_id maps to a partition, priority_class to a QOS or nice value") {
  SlurmOptions o;
  o.partition = "gpu";
  o.pool_partitions = {{"long", "gpu-long"}};
  o.class_qos = {{"CRITICAL", "high"}};
  o.class_nice = {{"BEST_EFFORT", 1000}};
  using V = std::vector<std::string>;
  CHECK(scheduling_args("", "", o) == V{"--partition=gpu"});  // NORMAL: nothing configured for it
  CHECK(scheduling_args("long", "CRITICAL", o) == V{"--partition=gpu-long", "--qos=high"});
  CHECK(scheduling_args("other", "BEST_EFFORT", o) == V{"--partition=gpu", "--nice=1000"});
  CHECK(scheduling_args("", "NORMAL", SlurmOptions{}) == V{});
}

TEST_CASE("server.conf: pools, scheduler settings and Slurm's class and pool maps, bad values are located") {
  char t[] = "/tmp/air-conf-XXXXXX";
  std::string dir = ::mkdtemp(t);
  std::string p = dir + "/server.conf";
  std::ofstream(p) << "[pools]\ntraining = 6\ninteractive = 2\n[scheduler]\ndefault_runtime_minutes = 90\n"
                      "preemption = false\n[slurm]\npartition.long = gpu-long\nqos.CRITICAL = high\n"
                      "nice.BEST_EFFORT = 1000\n";
  auto c = read_server_config(p);
  CHECK(c.pools == std::vector<std::pair<std::string, int>>{{"training", 6}, {"interactive", 2}});
  CHECK(c.default_runtime_minutes == 90);
  CHECK(c.preemption == false);
  CHECK(c.slurm_pool_partitions.at("long") == "gpu-long");
  CHECK(c.slurm_class_qos.at("CRITICAL") == "high");
  CHECK(c.slurm_class_nice.at("BEST_EFFORT") == 1000);
  struct Case {
    std::string text, error;
  };
  auto bad = GENERATE(Case{"[pools]\na = many\n", ":2: pool 'a' needs a number of GPUs (>= 0), got 'many'"},
                      Case{"[pools]\na = 1\na = 2\n", ":3: pool 'a' is defined twice"},
                      Case{"[scheduler]\npreemption = yes\n", ":2: 'preemption' must be true or false, got 'yes'"},
                      Case{"[scheduler]\ndefault_runtime_minutes = 0\n",
                           ":2: 'default_runtime_minutes' must be a whole number >= 1, got '0'"},
                      Case{"[slurm]\nqos.URGENT = high\n",
                           ":2: unknown priority class 'URGENT' in 'qos.URGENT' (BEST_EFFORT, NORMAL or CRITICAL)"},
                      Case{"[scheduler]\nbackfill = on\n", ":2: unknown key 'backfill' in [scheduler]"});
  std::ofstream(p) << bad.text;
  CHECK_THROWS_WITH(read_server_config(p), p + bad.error);
  std::filesystem::remove_all(dir);
}
