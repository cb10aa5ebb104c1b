// Starts tests/hub/hub_fixture.py (a real HTTP server on loopback) on a folder of repos, for the hub tests.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "hub/http.h"

namespace air::hub::test {
namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("air-hub-test-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

inline void write_file(const fs::path& p, const std::string& data) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

class Fixture {
 public:
  explicit Fixture(const fs::path& root, std::vector<std::string> extra = {}) {
    fs::path port_file = root.parent_path() / ("port-" + std::to_string(std::random_device{}()));
    std::vector<std::string> args = {"python3", std::string(AIR_SOURCE_DIR) + "/tests/hub/hub_fixture.py", "--root", root.string(),
                                     "--port-file", port_file.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      int devnull = ::open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      execvp("python3", argv.data());
      _exit(127);
    }
    for (int i = 0; i < 200 && !fs::exists(port_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    url = "http://127.0.0.1:" + read_file(port_file);
  }
  ~Fixture() { stop(); }
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  nlohmann::json stats() const { return nlohmann::json::parse(http_call({"GET", url + "/_fixture/stats", "", -1, {}}).body); }

  std::string url;

 private:
  pid_t pid_ = -1;
};

}  // namespace air::hub::test
