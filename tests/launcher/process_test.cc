// Child processes for real: own process group, pipes, exit codes, whole-group kill, and the guardian that
// leaves no orphan when the agent itself is killed.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "core/base/error.h"
#include "launcher/process.h"

using namespace air::launcher;
using namespace std::chrono_literals;

namespace {

SpawnOptions bash(const std::string& script) {
  SpawnOptions o;
  o.argv = {"bash", "-c", script};
  o.env = {"PATH=/usr/bin:/bin", "GREETING=hello there"};
  return o;
}

// Reads both pipes until both are closed.
std::pair<std::string, std::string> read_all(ChildProcess& c) {
  std::string out[2];
  char buf[4096];
  while (c.stdout_fd() >= 0 || c.stderr_fd() >= 0) {
    pollfd fds[2] = {{c.stdout_fd(), POLLIN, 0}, {c.stderr_fd(), POLLIN, 0}};
    poll(fds, 2, 1000);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) out[i].append(buf, n);
      if (n == 0) i == 0 ? c.close_stdout() : c.close_stderr();
    }
  }
  return {out[0], out[1]};
}

int wait_exit(ChildProcess& c) {
  for (int i = 0; i < 1000; ++i) {
    if (auto st = c.try_wait()) return exit_code_from_wait_status(*st);
    std::this_thread::sleep_for(10ms);
  }
  FAIL("the command did not exit");
  return -1;
}

// Alive and not a zombie (PID 1 of a container may never reap orphans).
bool live(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string s(buf, n);
  auto rp = s.rfind(')');
  return rp != std::string::npos && rp + 2 < s.size() && s[rp + 2] != 'Z' && s[rp + 2] != 'X';
}

bool wait_until_gone(pid_t pgid, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (process_group_members(pgid).empty()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return process_group_members(pgid).empty();
}

}  // namespace

TEST_CASE("the command runs in its own process group with the given environment and cwd", "[process]") {
  auto o = bash("echo \"$GREETING\"; pwd; echo pgid=$(ps -o pgid= -p $$ | tr -d ' '); echo err >&2; cat; echo \"stdin: $?\"; env | wc -l");
  o.cwd = "/tmp";
  ChildProcess c(o);
  auto [out, err] = read_all(c);
  CHECK(wait_exit(c) == 0);
  CHECK(out.rfind("hello there\n/tmp\n", 0) == 0);
  CHECK(out.find("pgid=" + std::to_string(c.pid()) + "\n") != std::string::npos);  // pgid == its own pid
  CHECK(out.find("stdin: 0\n") != std::string::npos);                         // /dev/null: cat ends at once
  CHECK(err == "err\n");
  CHECK(c.pgid() != getpgrp());
}

TEST_CASE("exit codes follow the shell: the code, or 128 + the signal", "[process]") {
  ChildProcess a(bash("exit 3"));
  CHECK(wait_exit(a) == 3);
  ChildProcess b(bash("kill -9 $$"));
  CHECK(wait_exit(b) == 137);
  ChildProcess c(bash("true"));
  CHECK(wait_exit(c) == 0);
}

TEST_CASE("a command that cannot start is a clear error", "[process]") {
  auto o = bash("true");
  o.cwd = "/nonexistent/dir";
  try {
    ChildProcess c(o);
    FAIL("expected an error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()) ==
          "cannot start the command: changing to the working directory /nonexistent/dir: No such file or directory");
  }
  SpawnOptions p;
  p.argv = {"no-such-program-air"};
  p.env = {"PATH=/usr/bin:/bin"};
  CHECK_THROWS_WITH(ChildProcess(p), "cannot start 'no-such-program-air': not found on PATH");
}

TEST_CASE("stopping the group ends grandchildren too, even ones that ignore SIGTERM", "[process]") {
  // Two background grandchildren, one of which ignores SIGTERM, plus a subshell of its own. The TERM-ignoring
  // subshell says "started" once its trap is set (an outer echo could come first, and SIGTERM then killed it).
  ChildProcess c(bash("sleep 300 & (trap '' TERM; echo started; sleep 300; sleep 300) & (sleep 300) & wait"));
  char buf[64];
  pollfd fd{c.stdout_fd(), POLLIN, 0};
  REQUIRE(poll(&fd, 1, 5000) == 1);
  REQUIRE(read(c.stdout_fd(), buf, sizeof buf) > 0);
  auto members = c.members();
  for (int i = 0; i < 200 && members.size() < 4; ++i) {  // the last forks may follow "started"
    std::this_thread::sleep_for(10ms);
    members = c.members();
  }
  CHECK(members.size() >= 4);  // bash, sleep, subshell(s), sleeps
  c.signal_group(SIGTERM);
  std::this_thread::sleep_for(300ms);
  CHECK(!c.members().empty());  // the TERM-ignoring one is still there
  c.kill_group_and_reap();
  CHECK(wait_until_gone(c.pgid(), 2s));
  for (pid_t p : members) CHECK(!live(p));
}

TEST_CASE("destroying a ChildProcess leaves nothing behind", "[process]") {
  pid_t pgid;
  {
    ChildProcess c(bash("sleep 300 & sleep 300 & wait"));
    pgid = c.pgid();
    std::this_thread::sleep_for(100ms);
    CHECK(!process_group_members(pgid).empty());
  }
  CHECK(wait_until_gone(pgid, 2s));
}

TEST_CASE("the guardian stops the group when the agent dies by SIGKILL", "[process]") {
  int report[2];
  REQUIRE(pipe(report) == 0);
  pid_t agent = fork();
  if (agent == 0) {
    // A stand-in agent: starts a command with grandchildren, tells the test its group, then dies hard.
    close(report[0]);
    try {
      SpawnOptions o = bash("trap '' TERM; sleep 300 & sleep 300 & wait");  // deaf to SIGTERM
      o.guardian_grace = 1000ms;
      auto* c = new ChildProcess(o);  // never destroyed: the agent "crashes"
      pid_t g = c->pgid();
      if (write(report[1], &g, sizeof g) != sizeof g) _exit(2);
      std::this_thread::sleep_for(200ms);
      kill(getpid(), SIGKILL);
    } catch (...) {
    }
    _exit(3);
  }
  close(report[1]);
  pid_t pgid = 0;
  REQUIRE(read(report[0], &pgid, sizeof pgid) == sizeof pgid);
  close(report[0]);
  int st;
  REQUIRE(waitpid(agent, &st, 0) == agent);
  REQUIRE(WIFSIGNALED(st));
  CHECK(process_group_members(pgid).size() >= 3);  // the command outlived the agent (grace) ...
  CHECK(wait_until_gone(pgid, 5s));                 // ... and the guardian ended it
}

// Issue 22, finding 8: a node's command inherited one of its agent's sockets to the workspace (libcurl's
// sockets are not close-on-exec). The command now starts with stdin, stdout and stderr only.
TEST_CASE("process: the command inherits no descriptor of the agent but 0, 1 and 2") {
  int leaky_file = ::open("/dev/null", O_RDONLY);                // no O_CLOEXEC, as a library might
  int leaky_socket = ::socket(AF_INET, SOCK_STREAM, 0);          // likewise
  REQUIRE(leaky_file >= 3);
  REQUIRE(leaky_socket >= 3);
  std::string fds = std::to_string(leaky_file) + " " + std::to_string(leaky_socket);
  ChildProcess c(bash("for f in 0 1 2 " + fds + "; do [ -e /proc/$$/fd/$f ] && echo -n \"$f \"; done; echo"));
  auto [out, err] = read_all(c);
  CHECK(wait_exit(c) == 0);
  CHECK(out == "0 1 2 \n");
  ::close(leaky_file);
  ::close(leaky_socket);
}
