// A seeded mutation fuzzer for CI (no libFuzzer needed): mutates the example workloads and YAML fragments
// for a bounded time and fails on any broken invariant, exception, or input that takes over a second.
// Usage: workload_fuzz [--seconds N] [--seed S]. The seed and iteration count are printed, so a failure
// can be replayed; the failing input is written to workload_fuzz_failure.yaml.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "tests/fuzz/workload_fuzz_target.h"

namespace {

// The input being processed, for the hang watchdog (SIGALRM) to save before exiting.
std::string g_current;

void on_hang(int) {
  int fd = ::open("workload_fuzz_failure.yaml", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    ssize_t ignored = ::write(fd, g_current.data(), g_current.size());
    (void)ignored;
    ::close(fd);
  }
  const char msg[] = "workload_fuzz: FAILED: an input took over 10 s (hang); saved to workload_fuzz_failure.yaml\n";
  ssize_t ignored = ::write(1, msg, sizeof(msg) - 1);
  (void)ignored;
  ::_exit(1);
}

using Clock = std::chrono::steady_clock;

std::vector<std::string> seed_corpus() {
  std::vector<std::string> corpus;
  for (const auto& e : std::filesystem::recursive_directory_iterator(AIR_EXAMPLES_DIR)) {
    if (e.path().extension() != ".yaml") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    corpus.push_back(ss.str());
  }
  corpus.push_back("experiment_name: a\ncompute: {accelerator_type: GPU_1xA10, num_accelerators: 1}\ncommand: x\n");
  corpus.push_back("a: &x [1, *x]\nb: !!str 3\nc: |\n  text\n? [k]\n: v\n");
  corpus.push_back("environment:\n  dependencies:\n    - 'pkg[a]>=1; python_version < \"3.12\"'\n    - -r r.txt\n");
  corpus.push_back("permissions:\n  - user_name: a\n    level: CAN_VIEW\nsecrets: {A: s/k}\nenv_variables: {B: 1}\n");
  return corpus;
}

const char* kTokens[] = {":",  ": ", "- ", "[",   "]",  "{",   "}",    ",",    "&a ", "*a",  "\t",  "\"",   "'",
                         "\n", "#",  "!!", "---", "? ", "|\n", ">-\n", "\\x",  "~",   "null", "1.5", "0x1f", "  ",
                         "%",  "@",  "`",  "\xff", "\xc3", "\xe2\x82", "\r\n", "\0", "...", "!!binary ", "<<: *a"};

std::string mutate(std::string s, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  int rounds = 1 + static_cast<int>(pick(8));
  for (int r = 0; r < rounds; ++r) {
    size_t at = pick(s.size() + 1);
    switch (pick(7)) {
      case 0:  // flip a byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
        break;
      case 1: {  // insert a YAML-significant token
        const char* t = kTokens[pick(sizeof(kTokens) / sizeof(kTokens[0]))];
        s.insert(at, t, std::max<size_t>(1, std::strlen(t)));
        break;
      }
      case 2:  // delete a range
        s.erase(at, pick(16));
        break;
      case 3: {  // duplicate a range
        size_t len = pick(64);
        s.insert(at, s.substr(at, len));
        break;
      }
      case 4: {  // splice from another corpus entry
        const std::string& o = corpus[pick(corpus.size())];
        size_t from = pick(o.size() + 1);
        s.insert(at, o.substr(from, pick(80)));
        break;
      }
      case 5:  // repeat a bracket or indentation many times
        s.insert(at, std::string(pick(300), "[{- \t"[pick(5)]));
        break;
      default:  // swap two lines' worth of text
        if (s.size() > 2) std::swap(s[pick(s.size())], s[pick(s.size())]);
        break;
    }
  }
  if (s.size() > (1 << 16)) s.resize(1 << 16);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 20;
  unsigned long long seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  ::signal(SIGALRM, on_hang);
  std::mt19937_64 rng(seed);
  std::vector<std::string> corpus = seed_corpus();
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  unsigned long long iterations = 0, slowest_ms = 0;
  while (Clock::now() < end) {
    std::string input = mutate(corpus[rng() % corpus.size()], corpus, rng);
    g_current = input;
    ::alarm(10);
    auto start = Clock::now();
    std::string bad = air::fuzz_workload_once(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    ::alarm(0);
    auto ms = static_cast<unsigned long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
    slowest_ms = std::max(slowest_ms, ms);
    if (bad.empty() && ms > 1000) bad = "took " + std::to_string(ms) + " ms";
    ++iterations;
    if (!bad.empty()) {
      std::ofstream("workload_fuzz_failure.yaml", std::ios::binary) << input;
      std::printf("workload_fuzz: FAILED after %llu inputs (seed %llu): %s; input saved to "
                  "workload_fuzz_failure.yaml\n",
                  iterations, seed, bad.c_str());
      return 1;
    }
    // Keep interesting survivors: they seed deeper mutations.
    if (corpus.size() < 512 && rng() % 64 == 0) corpus.push_back(input);
  }
  std::printf("workload_fuzz: %llu inputs in %.0f s (seed %llu), slowest %llu ms, 0 crashes, 0 broken invariants\n",
              iterations, seconds, seed, slowest_ms);
  return 0;
}
