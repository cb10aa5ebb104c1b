// air-train run as a real process for tests: the command line for one process or for N ranks through
// air-torchrun, and what the run printed (its exit code, output and the losses of its JSON step lines).
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <regex>
#include <string>

namespace air::train::testing {

struct TrainAttempt {
  int code = -1;
  std::string output;
  std::map<int, double> losses;  // step -> loss, from the JSON step lines
};

// air-train for world 1, else air-torchrun --standalone with `world` ranks of it.
inline std::string train_launcher(int world) {
  const std::string bin = AIR_BIN_DIR;
  return world == 1 ? bin + "/air-train"
                    : bin + "/air-torchrun --standalone --nproc_per_node " + std::to_string(world) + " " + bin +
                          "/air-train";
}

// Runs a shell command line (stderr into stdout) to its end.
inline TrainAttempt run_train_command(const std::string& cmd) {
  TrainAttempt a;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return a;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) a.output.append(buf, n);
  const int status = pclose(p);
  a.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  static const std::regex line(R"(\{"step":(\d+),.*?"loss":([-0-9.eE+]+))");
  for (std::sregex_iterator it(a.output.begin(), a.output.end(), line), end; it != end; ++it)
    a.losses[std::stoi((*it)[1])] = std::stod((*it)[2]);
  return a;
}

}  // namespace air::train::testing
