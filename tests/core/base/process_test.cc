// core/base/process.h: PATH lookup and starting a child (real processes, real files).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/base/process.h"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path dir;
  TempDir() {
    char t[] = "/tmp/air-process-test-XXXXXX";
    dir = ::mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(dir); }
};

void write_script(const fs::path& p, const std::string& body, bool exec = true) {
  std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
  fs::permissions(p, exec ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_write);
}

int wait_code(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0) {
  }
  return air::exit_code_from_wait_status(st);
}

std::string read_all(int fd) {
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

}  // namespace

TEST_CASE("find_on_path: the first executable file on the path, skipping folders and plain files") {
  TempDir t;
  fs::create_directories(t.dir / "a" / "tool");  // a folder named like the program: not it
  fs::create_directories(t.dir / "b");
  fs::create_directories(t.dir / "c");
  write_script(t.dir / "b" / "tool", "exit 0", false);  // not executable
  write_script(t.dir / "c" / "tool", "exit 0");
  std::string path = (t.dir / "a").string() + ":" + (t.dir / "b").string() + ":" + (t.dir / "c").string();
  CHECK(air::find_on_path("tool", path) == (t.dir / "c" / "tool").string());
  CHECK(air::find_on_path("missing-tool", path).empty());
  CHECK(air::find_on_path("./relative/tool", path) == "./relative/tool");  // a path is taken as it is
  CHECK(air::find_on_path("", path).empty());
  CHECK(air::find_on_path("sh") == air::find_on_path("sh", std::string(std::getenv("PATH"))));
  CHECK(air::env_entry({"A=1", "PATH=/x:/y", "PATHS=no"}, "PATH") == std::optional<std::string>("/x:/y"));
  CHECK_FALSE(air::env_entry({"PATHS=no"}, "PATH"));
}

TEST_CASE("spawn_process: argv, environment, folder, stdio and process group reach the child") {
  TempDir t;
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  air::SpawnSpec s;
  s.path = air::find_on_path("sh");
  s.argv = {"sh", "-c", "echo \"$1 $GREETING $(pwd) $(cut -d' ' -f5 /proc/$$/stat) $$\"; echo err >&2", "sh", "arg1"};
  s.env = std::vector<std::string>{"GREETING=hello", "PATH=" + std::string(std::getenv("PATH"))};
  s.cwd = t.dir.string();
  s.group = air::SpawnSpec::Group::kNewGroup;
  s.stdout_fd = p[1];
  s.stderr_fd = p[1];
  pid_t pid = air::spawn_process(s);
  ::close(p[1]);
  std::string out = read_all(p[0]);
  ::close(p[0]);
  CHECK(wait_code(pid) == 0);
  std::string want = "arg1 hello " + fs::canonical(t.dir).string() + " " + std::to_string(pid) + " " +
                     std::to_string(pid) + "\nerr\n";
  CHECK(out == want);
}

TEST_CASE("spawn_process: a child that cannot start is a clear error, or exit 127 with the caller's message") {
  TempDir t;
  air::SpawnSpec s;
  s.path = air::find_on_path("true");
  s.argv = {"true"};
  s.cwd = (t.dir / "nope").string();
  CHECK_THROWS_WITH(air::spawn_process(s), "cannot start the command: changing to the working directory " + s.cwd +
                                               ": No such file or directory");
  write_script(t.dir / "plain", "exit 0", false);
  s.cwd.clear();
  s.path = (t.dir / "plain").string();
  s.argv = {"plain"};
  try {
    air::spawn_process(s);
    FAIL("a file without the executable bit started");
  } catch (const air::SpawnError& e) {
    CHECK(e.stage == 4);
    CHECK(std::string(e.what()) == "cannot start the command: exec " + s.path + ": Permission denied");
  }
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  s.stderr_fd = p[1];
  s.exec_failure_message = "cannot execute it\n";
  pid_t pid = air::spawn_process(s);
  ::close(p[1]);
  CHECK(read_all(p[0]) == "cannot execute it\n");
  ::close(p[0]);
  CHECK(wait_code(pid) == 127);
}
