// Times what the run sandbox adds to a node's start (bench/sandbox_start.sh prints the table): the probe a
// Slurm node's agent makes once (the local backend's workspace probed at its own start), and `bash -c true` started plain beside the same command in the sandbox the agent builds
// (a node folder, a bin folder, two volumes; as root also the drop to an unprivileged account).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/sandbox/sandbox.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double run_ms(const std::vector<std::string>& argv_s) {
  std::vector<char*> argv;
  for (const auto& s : argv_s) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  auto t0 = Clock::now();
  pid_t pid = -1;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", argv[0]);
    std::exit(1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::fprintf(stderr, "%s failed\n", argv[0]);
    std::exit(1);
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Stat {
  double median, min;
};

template <class F>
Stat time_it(int runs, F f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) t.push_back(f());
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 50;
  namespace fs = std::filesystem;
  std::string tmp = fs::temp_directory_path() / ("air-sandbox-bench-" + std::to_string(getpid()));
  std::string node = tmp + "/home/runs/r/attempt_1/node_0", vols = tmp + "/home/volumes";
  fs::create_directories(node + "/code");
  fs::create_directories(vols + "/main/a/in");
  fs::create_directories(vols + "/main/a/out");
  if (std::string why = air::probe_sandbox(); !why.empty()) {
    std::printf("no sandbox on this machine: %s\n", why.c_str());
    fs::remove_all(tmp);
    return 2;
  }
  air::UnixAccount nobody{"nobody", 65534, 65534};
  air::SandboxSpec s;
  s.node_dir = node;
  s.read_only = {fs::canonical("/proc/self/exe").parent_path().string()};
  s.hidden = {tmp + "/home", vols};
  s.volumes_root = vols;
  s.volumes = {{"main/a/in", true}, {"main/a/out", false}};
  s.cwd = node + "/code";
  if (geteuid() == 0) s.run_as = &nobody;
  std::vector<std::string> cmd = {"bash", "-c", "true"};
  auto boxed = air::sandbox_argv(s);
  boxed.insert(boxed.end(), cmd.begin(), cmd.end());
  Stat plain = time_it(runs, [&] { return run_ms(cmd); });
  Stat sandboxed = time_it(runs, [&] { return run_ms(boxed); });
  Stat probe = time_it(runs, [&] {
    auto t0 = Clock::now();
    air::probe_sandbox();
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  });
  std::printf("%-44s %10s %8s\n", ("step (" + std::to_string(runs) + " runs each)").c_str(), "median ms", "min ms");
  std::printf("%-44s %10.2f %8.2f\n", "bash -c true, plain", plain.median, plain.min);
  std::printf("%-44s %10.2f %8.2f\n", "bash -c true, in the run sandbox", sandboxed.median, sandboxed.min);
  std::printf("%-44s %10.2f %8.2f\n", "the probe (a Slurm node's agent, once)", probe.median, probe.min);
  double local = sandboxed.median - plain.median, slurm = local + probe.median;
  auto verdict = [](double ms) { return ms <= 50 ? "met" : "NOT met"; };
  std::printf("%-44s %10.2f %8.2f   (target <= 50 ms: %s)\n", "added to a node's start, local backend",
              local, sandboxed.min - plain.min, verdict(local));
  std::printf("%-44s %10.2f %8.2f   (target <= 50 ms: %s)\n", "added to a node's start, Slurm (+ probe)", slurm,
              sandboxed.min - plain.min + probe.min, verdict(slurm));
  fs::remove_all(tmp);
  return 0;
}
