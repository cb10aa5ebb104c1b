// The workspace verbs in-process against a real local workspace daemon (the built `air` binary, real HTTP
// on loopback, real SQLite): embedded start, errors and exit codes, auth, snapshot upload checks.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "core/client/client.h"
#include "core/client/local_daemon.h"
#include "server/store/blobs.h"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string out, err;
};

Result air_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "air");
  std::ostringstream out, err;
  int code = air::cli::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

// A private AIR_HOME; the daemon it may start is stopped at the end.
struct Home {
  std::string dir;
  Home() {
    char t[] = "/tmp/air-cli-test-XXXXXX";
    dir = ::mkdtemp(t);
    ::setenv("AIR_HOME", dir.c_str(), 1);
    ::setenv("AIR_CONFIG_FILE", (dir + "/config").c_str(), 1);
    ::setenv("AIR_BIN_DIR", AIR_BIN_DIR, 1);
    ::unsetenv("AIR_HOST");
    ::unsetenv("AIR_TOKEN");
    ::setenv("DATABRICKS_CONFIG_FILE", (dir + "/databrickscfg").c_str(), 1);
    for (const char* v : {"DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CONFIG_PROFILE"}) ::unsetenv(v);
  }
  ~Home() {
    air::stop_local_daemon(dir);
    fs::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("cli: the local workspace starts on demand, is reused, reports its status and stops") {
  Home h;
  auto st = air_cli({"server", "status"});
  CHECK(st.code == 1);
  CHECK(st.out.find("local workspace: not running") != std::string::npos);
  auto l = air_cli({"list"});
  CHECK(l.code == 0);
  CHECK(l.out == "No active runs. (--all-status shows finished ones)\n");
  struct stat info {};
  REQUIRE(::stat((h.dir + "/server.json").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  auto d = air::read_daemon_info(h.dir);
  REQUIRE(d);
  CHECK(d->url.rfind("http://127.0.0.1:", 0) == 0);
  CHECK(air_cli({"list", "runs", "--all-status"}).out == "No runs found.\n");
  CHECK(air::read_daemon_info(h.dir)->pid == d->pid);  // reused, not restarted
  auto js = air_cli({"-o", "json", "server", "status"});
  CHECK(js.code == 0);
  CHECK(nlohmann::json::parse(js.out)["data"]["running"] == true);
  auto after = air_cli({"server", "status", "-o", "json"});  // global flags may follow the verb
  CHECK(after.code == 0);
  CHECK(nlohmann::json::parse(after.out)["data"] == nlohmann::json::parse(js.out)["data"]);
  auto nested = air_cli({"list", "runs", "--all-status", "--output", "json"});
  CHECK(nested.code == 0);
  CHECK(nested.out.rfind("{", 0) == 0);
  auto stop = air_cli({"server", "stop"});
  CHECK(stop.out == "local workspace stopped\n");
  CHECK(::kill(d->pid, 0) != 0);
  CHECK_FALSE(fs::exists(h.dir + "/server.json"));
}

TEST_CASE("cli: unknown runs, bad ids and bad flags give clear errors and stable exit codes") {
  Home h;
  auto g = air_cli({"get", "run", "deadbeef"});
  CHECK(g.code == 1);
  CHECK(g.err == "air: error: run deadbeef not found\n  hint: 'air list --all-status' shows the runs this workspace knows\n");
  CHECK(air_cli({"get", "run", "bad/id"}).code == 2);
  CHECK(air_cli({"get", "run"}).code == 2);
  auto c = air_cli({"cancel"});
  CHECK(c.code == 2);
  CHECK(c.err == "air: error: provide at least one JOB_RUN_ID, or use --all\n");
  CHECK(air_cli({"cancel", "--all", "-y"}).out.rfind("No active runs to cancel in http://127.0.0.1:", 0) == 0);
  auto cu = air_cli({"cancel", "deadbeef"});
  CHECK(cu.code == 1);
  CHECK(cu.err == "Run deadbeef not found. Please check the run ID and ensure you're using a Job Run ID.\n");
  auto cj = air_cli({"cancel", "deadbeef", "-o", "json"});
  auto cjd = nlohmann::json::parse(cj.out);
  CHECK(cjd["v"] == 1);
  CHECK(cjd["data"]["cancelled"].empty());
  CHECK(cjd["data"]["failed"][0]["run_id"] == "deadbeef");
  // -o json errors: the reference's error envelope on stdout.
  auto gj = air_cli({"get", "deadbeef", "-o", "json"});
  CHECK(gj.code == 1);
  auto gjd = nlohmann::json::parse(gj.out);
  CHECK(gjd["error"]["code"] == "NOT_FOUND");
  CHECK(gjd["error"]["kind"] == "NOT_FOUND");
  CHECK(gjd["error"]["retryable"] == false);
  CHECK(gjd["error"]["message"] == "run deadbeef not found");
  auto uj = air_cli({"cancel", "a", "--all", "-o", "json"});
  CHECK(uj.code == 2);
  CHECK(nlohmann::json::parse(uj.out)["error"]["code"] == "INVALID_ARGS");
  CHECK(nlohmann::json::parse(uj.out)["error"]["message"] == "cannot combine JOB_RUN_ID arguments with --all");
  CHECK(air_cli({"logs", "deadbeef", "--node", "-1"}).code == 2);
  CHECK(air_cli({"logs", "deadbeef"}).code == 1);
  auto f = air_cli({"list", "--filter", "colour=red"});
  CHECK(f.code == 2);
  CHECK(f.err == "air: error: unsupported --filter key \"colour\": supported keys are accelerator_type, experiment, "
                 "num_accelerators, status, user\n");
  CHECK(air_cli({"list", "--limit", "0"}).code == 2);
}

TEST_CASE("cli: an unreachable workspace names its URL and the cause") {
  Home h;
  ::setenv("AIR_HOST", "http://127.0.0.1:1", 1);
  ::setenv("AIR_TOKEN", "x", 1);
  auto r = air_cli({"list"});
  ::unsetenv("AIR_HOST");
  ::unsetenv("AIR_TOKEN");
  CHECK(r.code == 1);
  CHECK(r.err.rfind("air: error: cannot reach workspace at http://127.0.0.1:1: connection refused\n  hint: ", 0) == 0);
}

TEST_CASE("cli: profiles come from the config file, an unknown one lists the known ones") {
  Home h;
  std::ofstream(h.dir + "/config") << "[staging]\nhost = http://127.0.0.1:1\ntoken = t\n";
  auto r = air_cli({"-p", "prod", "list"});
  CHECK(r.code == 2);
  CHECK(r.err.find("unknown profile 'prod'") != std::string::npos);
  CHECK(r.err.find("known profiles: staging") != std::string::npos);
  auto s = air_cli({"-p", "staging", "list"});
  CHECK(s.code == 1);
  CHECK(s.err.find("cannot reach workspace at http://127.0.0.1:1") != std::string::npos);
}

TEST_CASE("cli: the workspace refuses a wrong token and a snapshot whose content does not match its digest") {
  Home h;
  REQUIRE(air_cli({"list"}).code == 0);
  auto d = air::read_daemon_info(h.dir);
  REQUIRE(d);
  air::Client bad(d->url, "not-the-token");
  CHECK_THROWS_WITH(bad.get_json("/api/air/v1/runs"), "the token is unknown or was revoked");
  air::Client c(d->url, d->token);
  std::string content = "archive bytes";
  std::string file = h.dir + "/blob";
  std::ofstream(file) << content;
  std::string digest = air::server::sha256_hex(content);
  std::string wrong = air::server::sha256_hex("something else");
  CHECK_THROWS_AS(c.put_file("/api/air/v1/snapshots/" + wrong, file), air::ApiError);
  CHECK_FALSE(c.head("/api/air/v1/snapshots/" + wrong));
  CHECK_FALSE(c.head("/api/air/v1/snapshots/" + digest));
  c.put_file("/api/air/v1/snapshots/" + digest, file);
  CHECK(c.head("/api/air/v1/snapshots/" + digest));
  c.get_to_file("/api/air/v1/snapshots/" + digest, h.dir + "/back");
  std::ifstream back(h.dir + "/back");
  std::string got((std::istreambuf_iterator<char>(back)), {});
  CHECK(got == content);
}

TEST_CASE("cli: an unknown verb is a usage error with a did-you-mean, also with --help") {
  Home h;
  auto u = air_cli({"nosuchverb", "--help"});
  CHECK(u.code == 2);
  CHECK(u.out.empty());
  CHECK(u.err == "air: error: unknown command 'nosuchverb'\n  hint: run 'air --help' for the commands\n");
  auto near = air_cli({"-o", "json", "cancl", "--help"});
  CHECK(near.code == 2);
  CHECK(near.err == "air: error: unknown command 'cancl'\n  hint: did you mean 'cancel'? run 'air --help' for the commands\n");
  auto bare = air_cli({"lisst"});
  CHECK(bare.code == 2);
  CHECK(bare.err.rfind("air: error: unknown command 'lisst'\n  hint: did you mean 'list'?", 0) == 0);
  // A known verb's help and the top-level help are untouched.
  CHECK(air_cli({"cancel", "--help"}).code == 0);
  CHECK(air_cli({"--help"}).code == 0);
}

TEST_CASE("cli: air cancel's refusals other than an unknown run carry the air: error: prefix") {
  Home h;
  REQUIRE(air_cli({"list"}).code == 0);
  auto d = air::read_daemon_info(h.dir);
  REQUIRE(d);
  ::setenv("AIR_HOST", d->url.c_str(), 1);
  ::setenv("AIR_TOKEN", "not-the-token", 1);
  auto r = air_cli({"cancel", "deadbeef"});
  ::unsetenv("AIR_HOST");
  ::unsetenv("AIR_TOKEN");
  CHECK(r.code == 1);
  CHECK(r.err == "air: error: the token is unknown or was revoked\n");
}
