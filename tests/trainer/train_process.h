// air-train run as a real process for tests: the command line for one process or for N ranks through
// air-torchrun, and what the run did (its exit code, output, and the losses of the JSON step lines rank 0
// appended to its `metrics_file`: full precision, where the readable log line rounds the loss).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace air::train::testing {

struct TrainAttempt {
  int code = -1;
  std::string output;
  std::map<int, double> losses;  // step -> loss, from the metrics file's step lines
};

// air-train for world 1, else air-torchrun --standalone with `world` ranks of it.
inline std::string train_launcher(int world) {
  const std::string bin = AIR_BIN_DIR;
  return world == 1 ? bin + "/air-train"
                    : bin + "/air-torchrun --standalone --nproc_per_node " + std::to_string(world) + " " + bin +
                          "/air-train";
}

// Runs an air-train command line (stderr into stdout) to its end, with a fresh metrics file of its own.
inline TrainAttempt run_train_command(const std::string& cmd) {
  static int runs = 0;
  const std::filesystem::path metrics = std::filesystem::temp_directory_path() /
      ("air_train_metrics_" + std::to_string(::getpid()) + "_" + std::to_string(runs++) + ".jsonl");
  std::filesystem::remove(metrics);
  TrainAttempt a;
  FILE* p = popen((cmd + " --set metrics_file=" + metrics.string() + " 2>&1").c_str(), "r");
  if (!p) return a;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) a.output.append(buf, n);
  const int status = pclose(p);
  a.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("step") && j.contains("loss")) a.losses[j["step"].get<int>()] = j["loss"].get<double>();
  }
  in.close();
  std::filesystem::remove(metrics);
  return a;
}

}  // namespace air::train::testing
