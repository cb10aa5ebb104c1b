// The node agent end to end against a loopback workspace: environment, logs, exit codes, failure report,
// stop (no process left), interruption, and a workspace that goes down in the middle of a run.
#include <catch2/catch.hpp>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "core/snapshot/snapshot.h"
#include "launcher/agent/node_agent.h"
#include "launcher/process.h"
#include "tests/launcher/test_agent.h"
#include "tests/launcher/test_files.h"
#include "tests/launcher/test_workspace.h"

using namespace air::launcher;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

using air::launcher_test::TempDir;

using air::launcher_test::read_file;

// The text of each stored line, as "o text" / "e text" (the timestamp is checked and dropped).
std::vector<std::string> texts(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    auto sp = line.find(' ');
    REQUIRE(sp == 13);  // unix milliseconds
    out.push_back(line.substr(sp + 1));
  }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

struct Fixture {
  air::test::TestWorkspace ws;
  TempDir dir;
  NodeAgentOptions options;

  explicit Fixture(const std::string& command, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json spec = {{"run_id", "run-7"},
                           {"attempt", 2},
                           {"node_rank", 1},
                           {"num_nodes", 2},
                           {"local_world_size", 4},
                           {"master_addr", "127.0.0.1"},
                           {"master_port", 29512},
                           {"command", command},
                           {"env", {{"MY_VAR", "my value"}}},
                           {"secrets", nlohmann::json::array()},
                           {"parameters_yaml", "lr: 0.1\nsteps: 3\n"},
                           {"snapshot_digest", ""},
                           {"gpu", false},
                           {"max_log_bytes", 0},
                           {"an_unknown_field", true}};
    spec.update(extra);
    ws.node("run-7", 2, 1).spec = spec;
    options = air::launcher_test::agent_options(ws, "run-7", 2, 1, (dir.path / "node1").string());
  }
  air::test::TestWorkspace::Node node() { return ws.snapshot_of("run-7", 2, 1); }
  std::future<int> start() {
    return std::async(std::launch::async, [this] { return run_node_agent(options); });
  }
  // The command's pid from the first status that carries one. The output can reach the workspace before the
  // RUNNING report does (different connections), so the last status may still be a STARTING heartbeat.
  int wait_for_pid(std::chrono::seconds limit = 10s) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      for (const auto& s : node().statuses)
        if (s.contains("pid") && s["pid"].is_number_integer() && s["pid"].get<int>() > 0) return s["pid"].get<int>();
      std::this_thread::sleep_for(20ms);
    }
    return 0;
  }
  // Waits until the stored log contains text.
  bool wait_for_log(const std::string& text, std::chrono::seconds limit = 10s) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (node().log.find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
};

}  // namespace

TEST_CASE("the command sees the contract's environment, code dir and hyperparameters", "[agent]") {
  setenv("AIR_NODE_TOKEN", "tok-secret-123", 1);  // as the workspace starts the agent
  Fixture f(R"SH(for v in NUM_NODES NODE_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT PET_NNODES PET_NODE_RANK \
PET_NPROC_PER_NODE PET_MASTER_ADDR PET_MASTER_PORT AIR_RUN_ID AIR_ATTEMPT MY_VAR CUDA_VISIBLE_DEVICES; do
  echo "$v=${!v}"; done
echo "path0=${PATH%%:*}"
echo "cwd_is_code=$([ "$PWD" = "$CODE_SOURCE_PATH" ] && echo yes)"
echo "hp_in_workdir=$([ "$HYPERPARAMETERS_PATH" = "$(dirname "$CODE_SOURCE_PATH")/hyperparameters.yaml" ] && echo yes)"
cat "$HYPERPARAMETERS_PATH"
echo "token=${AIR_NODE_TOKEN:-none}"
echo problem >&2
printf 'no newline at the end')SH");
  f.options.gpus = "0,1";
  int rc = run_node_agent(f.options);
  unsetenv("AIR_NODE_TOKEN");
  CHECK(rc == 0);
  auto node = f.node();
  auto lines = texts(node.log);
  for (const char* want :
       {"o NUM_NODES=2", "o NODE_RANK=1", "o LOCAL_WORLD_SIZE=4", "o MASTER_ADDR=127.0.0.1", "o MASTER_PORT=29512",
        "o PET_NNODES=2", "o PET_NODE_RANK=1", "o PET_NPROC_PER_NODE=4", "o PET_MASTER_ADDR=127.0.0.1",
        "o PET_MASTER_PORT=29512", "o AIR_RUN_ID=run-7", "o AIR_ATTEMPT=2", "o MY_VAR=my value",
        "o CUDA_VISIBLE_DEVICES=0,1", "o cwd_is_code=yes", "o hp_in_workdir=yes", "o lr: 0.1", "o steps: 3",
        "o token=none", "e problem"}) {
    CHECK(contains(lines, want));
  }
  CHECK(contains(lines, std::string("o path0=") + AIR_BIN_DIR));
  CHECK(lines.back() == "o no newline at the end");
  CHECK(read_file(fs::path(f.options.workdir) / "hyperparameters.yaml") == "lr: 0.1\nsteps: 3\n");
  CHECK(node.log == read_file(fs::path(f.options.workdir) / "log.spool"));
  REQUIRE(node.statuses.size() >= 3);
  // STARTING (heartbeats while preparing), then RUNNING with the pid, then the end.
  size_t i = 0;
  while (i < node.statuses.size() && node.statuses[i]["state"] == "STARTING") ++i;
  CHECK(i >= 1);
  REQUIRE(i + 1 < node.statuses.size());
  CHECK(node.statuses[i]["state"] == "RUNNING");
  CHECK(node.statuses[i]["pid"].is_number_integer());
  CHECK(node.statuses.back()["state"] == "SUCCEEDED");
  CHECK(node.statuses.back()["exit_code"] == 0);
  std::string agent_log = read_file(fs::path(f.options.workdir) / "agent.log");
  CHECK(agent_log.find("command exited with code 0") != std::string::npos);
  CHECK(agent_log.find(f.ws.token()) == std::string::npos);
}

TEST_CASE("an empty parameters block still gives a YAML file", "[agent]") {
  Fixture f("cat \"$HYPERPARAMETERS_PATH\"", {{"parameters_yaml", ""}});
  CHECK(run_node_agent(f.options) == 0);
  CHECK(contains(texts(f.node().log), "o {}"));
}

TEST_CASE("a failing command is reported with its exit code and last lines", "[agent]") {
  Fixture f("for i in $(seq 1 30); do echo line $i; done; exit 3");
  CHECK(run_node_agent(f.options) == 1);
  auto last = f.node().statuses.back();
  CHECK(last["state"] == "FAILED");
  CHECK(last["exit_code"] == 3);
  CHECK(last["message"] == "command exited with code 3");
  std::vector<std::string> want;
  for (int i = 11; i <= 30; ++i) want.push_back("line " + std::to_string(i));
  CHECK(last["last_lines"].get<std::vector<std::string>>() == want);
}

TEST_CASE("a command killed by a signal reports 128 + the signal", "[agent]") {
  Fixture f("kill -SEGV $$");
  CHECK(run_node_agent(f.options) == 1);
  auto last = f.node().statuses.back();
  CHECK(last["exit_code"] == 139);
  CHECK(last["message"].get<std::string>().rfind("command killed by signal 11", 0) == 0);
}

TEST_CASE("stop from the workspace ends the whole process group and reports it", "[agent]") {
  bool deaf = GENERATE(false, true);  // the second command ignores SIGTERM: SIGKILL after the grace
  Fixture f(deaf ? "trap '' TERM; sleep 300 & sleep 300 & echo ready; wait; wait"
                 : "sleep 300 & (sleep 300; echo never) & echo ready; wait");
  f.options.stop_grace = 500ms;
  auto rc = f.start();
  REQUIRE(f.wait_for_log(" o ready"));
  int pid = f.wait_for_pid();
  REQUIRE(pid > 0);
  CHECK(process_group_members(pid).size() >= 3);
  auto t0 = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(f.ws.mu);
    f.ws.node("run-7", 2, 1).stop = true;
  }
  REQUIRE(rc.wait_for(10s) == std::future_status::ready);
  CHECK(rc.get() == 1);
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);
  CHECK(process_group_members(pid).empty());
  auto last = f.node().statuses.back();
  CHECK(last["state"] == "FAILED");
  CHECK(last["message"] == "stopped by workspace");
  CHECK(last["exit_code"] == (deaf ? 137 : 143));
}

TEST_CASE("SIGTERM to the agent stops the command first", "[agent]") {
  Fixture f("sleep 300 & echo ready; wait");
  f.options.handle_signals = true;
  auto rc = f.start();
  REQUIRE(f.wait_for_log(" o ready"));
  int pid = f.wait_for_pid();
  REQUIRE(pid > 0);
  kill(getpid(), SIGTERM);
  REQUIRE(rc.wait_for(10s) == std::future_status::ready);
  CHECK(rc.get() == 130);
  CHECK(process_group_members(pid).empty());
  auto last = f.node().statuses.back();
  CHECK(last["state"] == "FAILED");
  CHECK(last["message"] == "node agent interrupted by TERM");
}

// Issue 22, finding 8: an agent whose workspace was gone ignored SIGTERM for more than 5 s (it tried to
// drain its log and report for 10 + 10 s). Now it exits within 5 s, its final status spooled on disk.
TEST_CASE("SIGTERM with the workspace gone: the agent exits within 5 s, final status spooled", "[agent]") {
  Fixture f("echo ready; sleep 300");
  f.options.handle_signals = true;
  auto rc = f.start();
  REQUIRE(f.wait_for_log(" o ready"));
  f.ws.down();
  std::this_thread::sleep_for(200ms);
  auto t0 = std::chrono::steady_clock::now();
  kill(getpid(), SIGTERM);
  REQUIRE(rc.wait_for(10s) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  CHECK(rc.get() == 130);
  auto final = nlohmann::json::parse(read_file(fs::path(f.options.workdir) / "final_status.json"));
  CHECK(final["state"] == "FAILED");
  CHECK(final["message"].get<std::string>().rfind("node agent interrupted by TERM", 0) == 0);
  f.ws.up();
}

TEST_CASE("logs survive a workspace that goes down mid-run and fails uploads", "[agent]") {
  Fixture f("seq 1 20000 | sed 's/^/line /'; echo half >&2; sleep 1.5; seq 20001 40000 | sed 's/^/line /'");
  {
    std::lock_guard lock(f.ws.mu);
    f.ws.fail_every_nth_log_post = 3;
  }
  auto rc = f.start();
  REQUIRE(f.wait_for_log("e half"));
  f.ws.down();
  std::this_thread::sleep_for(2500ms);  // the command finishes while nobody listens
  f.ws.up();
  REQUIRE(rc.wait_for(30s) == std::future_status::ready);
  CHECK(rc.get() == 0);
  auto node = f.node();
  CHECK(node.log == read_file(fs::path(f.options.workdir) / "log.spool"));
  int n = 0;
  for (const auto& t : texts(node.log)) {
    if (t.rfind("o line ", 0) != 0) continue;
    REQUIRE(t == "o line " + std::to_string(++n));
  }
  CHECK(n == 40000);
  CHECK(node.partial_bodies == 0);
  CHECK(node.statuses.back()["state"] == "SUCCEEDED");
}

TEST_CASE("an unknown node is a clear, quick failure", "[agent]") {
  Fixture f("true");
  f.options.node = 5;
  auto t0 = std::chrono::steady_clock::now();
  CHECK(run_node_agent(f.options) == 1);
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  std::string agent_log = read_file(fs::path(f.options.workdir) / "agent.log");
  CHECK(agent_log.find("cannot fetch the node spec: HTTP 404: no such node") != std::string::npos);
}

TEST_CASE("a snapshot whose bytes do not match its digest is refused", "[agent]") {
  std::string digest(64, 'a');
  Fixture f("echo should not run", {{"snapshot_digest", digest}});
  f.ws.blobs[digest] = "not the archive you are looking for";
  CHECK(run_node_agent(f.options) == 1);
  auto node = f.node();
  CHECK(node.log.empty());
  auto last = node.statuses.back();
  CHECK(last["state"] == "FAILED");
  CHECK(last["message"].get<std::string>().rfind("snapshot download is corrupt: expected SHA-256 aaaaaaaaaaaa", 0) == 0);
  CHECK(last["exit_code"].is_null());
}

TEST_CASE("the snapshot is downloaded, checked and unpacked into CODE_SOURCE_PATH", "[agent]") {
  TempDir src;
  fs::create_directories(src.path / "pkg");
  std::ofstream(src.path / "train.py") << "print('hi')\n";
  std::ofstream(src.path / "pkg" / "util.py") << "X = 1\n";
  auto manifest = air::scan_snapshot(src.path.string(), {});
  auto archive = air::write_snapshot_archive(manifest, (src.path.parent_path() / (src.path.filename().string() + ".tar.zst")).string());
  Fixture f("cat train.py pkg/util.py; ls \"$CODE_SOURCE_PATH\" | sort | tr '\\n' ' '", {{"snapshot_digest", archive.sha256}});
  f.ws.blobs[archive.sha256] = read_file(archive.path);
  fs::remove(archive.path);
  CHECK(run_node_agent(f.options) == 0);
  auto lines = texts(f.node().log);
  CHECK(lines == std::vector<std::string>{"o print('hi')", "o X = 1", "o pkg train.py "});
  CHECK(fs::exists(fs::path(f.options.workdir) / "snapshot.tar.zst"));
}
