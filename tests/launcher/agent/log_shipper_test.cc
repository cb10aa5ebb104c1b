// The spool and the shipper against a real HTTP workspace on loopback that fails, drops replies, loses
// its tail and goes down: the stored log must equal the spool byte for byte (0 lost, 0 duplicated lines).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "launcher/agent/log_shipper.h"
#include "core/logs/framing.h"
#include "tests/launcher/test_files.h"
#include "tests/launcher/test_workspace.h"

using namespace air::launcher;
using air::logs::LineFramer;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

using air::launcher_test::TempDir;

const char* kLogPath = "/api/air/v1/runs/r1/attempts/1/nodes/0/logs";

ShipperOptions fast_options(std::vector<std::string>* messages = nullptr) {
  ShipperOptions o;
  o.path = kLogPath;
  o.min_backoff = 5ms;
  o.max_backoff = 50ms;
  o.request_timeout_ms = 5000;
  o.max_chunk = 4096;  // many chunks even for a small test log
  static std::mutex mu;
  if (messages) {
    o.log = [messages](const std::string& m) {
      std::lock_guard lock(mu);
      messages->push_back(m);
    };
  }
  return o;
}

// Writes `lines` numbered lines through a framer into the spool, in uneven pieces, notifying as it goes.
void produce(LogSpool& spool, LogShipper& shipper, int lines, int from = 0) {
  LineFramer f('o');
  std::string raw, framed;
  for (int i = from; i < from + lines; ++i) raw += "line " + std::to_string(i) + " " + std::string(i % 37, 'x') + "\n";
  size_t pos = 0, step = 1;
  while (pos < raw.size()) {
    size_t n = std::min(raw.size() - pos, step * 97);
    framed.clear();
    f.feed(std::string_view(raw).substr(pos, n), 1000 + static_cast<int64_t>(pos), framed);
    spool.append(framed);
    shipper.notify();
    pos += n;
    step = step % 13 + 1;
  }
}

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Checks that the stored log holds lines 0..n-1 exactly once, in order.
void check_lines(const std::string& log, int n) {
  std::istringstream in(log);
  std::string line;
  int expect = 0;
  while (std::getline(in, line)) {
    auto p = line.find(" o line ");
    REQUIRE(p != std::string::npos);
    int got = std::stoi(line.substr(p + 8));
    REQUIRE(got == expect);
    ++expect;
  }
  CHECK(expect == n);
}

}  // namespace

TEST_CASE("the shipper delivers the spool exactly, in whole lines", "[shipper]") {
  TempDir dir;
  air::test::TestWorkspace ws;
  ws.node("r1", 1, 0);
  LogSpool spool((dir.path / "log.spool").string());
  LogShipper shipper(spool, std::make_unique<air::Client>(ws.url(), ws.token()), fast_options());
  shipper.start();
  produce(spool, shipper, 3000);
  REQUIRE(shipper.drain(std::chrono::steady_clock::now() + 20s));
  shipper.stop();
  auto node = ws.snapshot_of("r1", 1, 0);
  CHECK(node.log == file_text(spool.path()));
  CHECK(node.partial_bodies == 0);
  CHECK(node.log_posts > 10);
  check_lines(node.log, 3000);
}

TEST_CASE("failed uploads and lost replies are retried without loss or duplication", "[shipper]") {
  TempDir dir;
  air::test::TestWorkspace ws;
  ws.node("r1", 1, 0);
  {
    std::lock_guard lock(ws.mu);
    ws.fail_log_posts_before_store = 3;
    ws.fail_log_posts_after_store = 3;
    ws.fail_every_nth_log_post = 4;
  }
  std::vector<std::string> messages;
  LogSpool spool((dir.path / "log.spool").string());
  LogShipper shipper(spool, std::make_unique<air::Client>(ws.url(), ws.token()), fast_options(&messages));
  shipper.start();
  produce(spool, shipper, 5000);
  REQUIRE(shipper.drain(std::chrono::steady_clock::now() + 30s));
  shipper.stop();
  auto node = ws.snapshot_of("r1", 1, 0);
  CHECK(node.log == file_text(spool.path()));
  check_lines(node.log, 5000);
  CHECK(shipper.stats().failures >= 6);
  REQUIRE(!messages.empty());
  CHECK(messages.front().find("cannot ship logs to the workspace (HTTP 500)") == 0);
}

TEST_CASE("logs spool while the workspace is down and catch up when it is back", "[shipper]") {
  TempDir dir;
  air::test::TestWorkspace ws;
  ws.node("r1", 1, 0);
  std::vector<std::string> messages;
  LogSpool spool((dir.path / "log.spool").string());
  LogShipper shipper(spool, std::make_unique<air::Client>(ws.url(), ws.token()), fast_options(&messages));
  shipper.start();
  produce(spool, shipper, 1000, 0);
  REQUIRE(shipper.drain(std::chrono::steady_clock::now() + 10s));
  ws.down();
  produce(spool, shipper, 2000, 1000);
  CHECK_FALSE(shipper.drain(std::chrono::steady_clock::now() + 300ms));  // nobody to ship to
  CHECK(shipper.acked() < spool.size());
  ws.up();
  produce(spool, shipper, 1000, 3000);
  REQUIRE(shipper.drain(std::chrono::steady_clock::now() + 20s));
  shipper.stop();
  auto node = ws.snapshot_of("r1", 1, 0);
  CHECK(node.log == file_text(spool.path()));
  check_lines(node.log, 4000);
  bool resumed = false;
  for (const auto& m : messages) resumed |= m.rfind("log shipping resumed", 0) == 0;
  CHECK(resumed);
}

TEST_CASE("a workspace that lost the tail of a log (LOG_GAP) gets it resent", "[shipper]") {
  TempDir dir;
  air::test::TestWorkspace ws;
  ws.node("r1", 1, 0);
  LogSpool spool((dir.path / "log.spool").string());
  LogShipper shipper(spool, std::make_unique<air::Client>(ws.url(), ws.token()), fast_options());
  shipper.start();
  produce(spool, shipper, 2000, 0);
  REQUIRE(shipper.drain(std::chrono::steady_clock::now() + 10s));
  {
    // As if the workspace restarted from a state saved a while ago: keep the first 100 lines only.
    std::lock_guard lock(ws.mu);
    auto& log = ws.node("r1", 1, 0).log;
    size_t pos = 0;
    for (int i = 0; i < 100; ++i) pos = log.find('\n', pos) + 1;
    log.resize(pos);
  }
  produce(spool, shipper, 500, 2000);
  REQUIRE(shipper.drain(std::chrono::steady_clock::now() + 10s));
  shipper.stop();
  auto node = ws.snapshot_of("r1", 1, 0);
  CHECK(node.log == file_text(spool.path()));
  check_lines(node.log, 2500);
  CHECK(shipper.stats().gaps >= 1);
}

TEST_CASE("a spool with a size limit keeps whole lines and says where it stopped", "[shipper]") {
  TempDir dir;
  LogSpool spool((dir.path / "log.spool").string(), 2048);
  std::string lines;
  for (int i = 0; i < 100; ++i) lines += "1 o line " + std::to_string(i) + " padding padding\n";
  REQUIRE(spool.append(lines));
  REQUIRE(spool.append("2 o later\n"));
  std::string text = file_text(spool.path());
  CHECK(text.size() <= 2048);
  CHECK(text.back() == '\n');
  auto last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  CHECK(last.find(" e [air] log truncated: max_log_bytes (2048) reached; later output is dropped\n") !=
        std::string::npos);
  CHECK(text.find("later") == text.find("later output"));  // the line after the limit is not there
  CHECK(spool.dropped_bytes() > 0);
}
