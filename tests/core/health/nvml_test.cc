// The NVML reader against a fake libnvidia-ml (tests/core/health/fake_nvml.cc, built as a shared library).
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/health/nvml.h"

using namespace air::health;

namespace {

struct FakeState {
  std::string path = std::filesystem::temp_directory_path().string() + "/air_fake_nvml_" + std::to_string(::getpid());
  explicit FakeState(const std::string& text) {
    write(text);
    ::setenv("AIR_FAKE_NVML_STATE", path.c_str(), 1);
  }
  void write(const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }
  ~FakeState() {
    std::filesystem::remove(path);
    ::unsetenv("AIR_FAKE_NVML_STATE");
  }
};

}  // namespace

TEST_CASE("NVML: loaded at run time, each GPU's utilisation, memory and power", "[health][nvml]") {
  FakeState state("97 40000 81559 612.5\n3 1200 81559 -1\n");
  std::string why;
  auto nvml = Nvml::load(AIR_FAKE_NVML, &why);
  REQUIRE(nvml);
  CHECK(why.empty());
  REQUIRE(nvml->device_count() == 2);
  auto g0 = nvml->read(0);
  REQUIRE(g0);
  CHECK(g0->utilization_percent == 97.0);
  CHECK(g0->memory_used_megabytes == Approx(40000.0));
  CHECK(g0->memory_total_megabytes == Approx(81559.0));
  REQUIRE(g0->power_watts);
  CHECK(*g0->power_watts == Approx(612.5));
  auto g1 = nvml->read(1);
  REQUIRE(g1);
  CHECK_FALSE(g1->power_watts);  // the board does not report power: no figure, not an error
  CHECK_FALSE(nvml->read(2));
  // Read anew each time: the state file changes under it.
  state.write("0 100 81559 90\n");
  CHECK(nvml->device_count() == 1);
  CHECK(nvml->read(0)->utilization_percent == 0.0);
}

TEST_CASE("NVML: AIR_NVML_LIBRARY picks the library, and a missing one or a failed init is no GPU, no error",
          "[health][nvml]") {
  FakeState state("50 1 2 3\n");
  ::setenv("AIR_NVML_LIBRARY", AIR_FAKE_NVML, 1);
  CHECK(Nvml::load());
  ::setenv("AIR_NVML_LIBRARY", "/no/such/libnvidia-ml.so.1", 1);
  std::string why;
  CHECK_FALSE(Nvml::load({}, &why));
  CHECK(why.find("cannot load /no/such/libnvidia-ml.so.1") == 0);
  ::unsetenv("AIR_NVML_LIBRARY");
  ::setenv("AIR_FAKE_NVML_FAIL_INIT", "1", 1);
  CHECK_FALSE(Nvml::load(AIR_FAKE_NVML, &why));
  CHECK(why == "nvmlInit failed with code 9");
  ::unsetenv("AIR_FAKE_NVML_FAIL_INIT");
  // A library that is not NVML at all.
  CHECK_FALSE(Nvml::load("libc.so.6", &why));
  CHECK(why.find("lacks an NVML function") != std::string::npos);
}

TEST_CASE("NVML: a kernel that spins without touching memory (a hung NCCL collective) is not work",
          "[health][nvml]") {
  // util, memory used, total, power, memory rate: training; a collective spinning on a flag; idle; light work
  // (small cache-resident matmuls: launch-bound, memory rate 0, as measured on an H200).
  FakeState state("98 60000 81559 612 41\n100 60000 81559 131 0\n0 60000 81559 70 0\n20 3000 81559 147 0\n");
  auto nvml = Nvml::load(AIR_FAKE_NVML);
  REQUIRE(nvml);
  auto train = nvml->read(0), spin = nvml->read(1), idle = nvml->read(2), light = nvml->read(3);
  REQUIRE((train && spin && idle && light));
  CHECK(train->memory_utilization_percent == 41.0);
  CHECK(spin->utilization_percent == 100.0);
  CHECK(spin->memory_utilization_percent == 0.0);
  CHECK(gpu_working(*train, 10));
  CHECK_FALSE(gpu_working(*spin, 10));
  CHECK_FALSE(gpu_working(*idle, 10));
  CHECK(gpu_working(*light, 10));
  CHECK_FALSE(gpu_working(*light, 50));
  GpuReading almost;
  almost.utilization_percent = 96;
  almost.memory_utilization_percent = 0.5;
  CHECK_FALSE(gpu_working(almost, 10));
  almost.memory_utilization_percent = 2;
  CHECK(gpu_working(almost, 10));
}

TEST_CASE("CUDA_VISIBLE_DEVICES: a node's own GPUs by NVML index", "[health][nvml]") {
  CHECK(visible_gpu_indices("", 3) == std::vector<int>{0, 1, 2});
  CHECK(visible_gpu_indices("2,0", 4) == std::vector<int>{2, 0});
  CHECK(visible_gpu_indices("1,7", 4) == std::vector<int>{1});  // an index past the machine's GPUs
  CHECK(visible_gpu_indices("GPU-5e3a,GPU-77", 2) == std::vector<int>{0, 1});
}
