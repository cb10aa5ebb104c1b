// Finding the local workspace daemon without a request: its lock and the pid it wrote there.
#include "core/client/local_daemon.h"

#include <catch2/catch.hpp>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

namespace fs = std::filesystem;

namespace {
struct Home {
  std::string path;
  Home() {
    char tmpl[] = "/tmp/air-daemon-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Home() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
}  // namespace

TEST_CASE("the daemon lock names its holder's pid while held, and nobody after") {
  Home home;
  CHECK(air::daemon_lock_holder(home.path) == 0);
  {
    std::optional<air::DaemonLock> lock(air::lock_daemon_home(home.path));
    CHECK(air::daemon_lock_holder(home.path) == ::getpid());
    CHECK(air::daemon_lock_held(home.path));
  }
  CHECK(air::daemon_lock_holder(home.path) == 0);
  CHECK_FALSE(air::daemon_lock_held(home.path));
}

TEST_CASE("a live daemon whose server.json is its own is used without a health request") {
  Home home;
  air::DaemonLock lock = air::lock_daemon_home(home.path);
  // Nothing listens on this URL: a health request would fail, and with the lock held the CLI would then
  // wait for the daemon to answer (2 minutes). The lock and the pid say it is this home's daemon.
  air::write_daemon_info(home.path, air::DaemonInfo{static_cast<int>(::getpid()), 9, "http://127.0.0.1:9", "tok", home.path});
  auto t = air::ensure_local_daemon(home.path, "/nonexistent/air");
  CHECK(t.url == "http://127.0.0.1:9");
  CHECK(t.token == "tok");
}
