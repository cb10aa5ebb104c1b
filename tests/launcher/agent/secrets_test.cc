// The node agent with secrets, MLflow variables and a Python environment, against a loopback workspace:
// the command sees the value; the stored log, the spool file, the agent's own log and its reports never
// hold it (plain, base64, URL-encoded, split across writes, in a failure's last lines).
#include <catch2/catch.hpp>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/codec.h"
#include "core/base/sha256.h"
#include "launcher/agent/node_agent.h"
#include "tests/launcher/test_agent.h"
#include "tests/launcher/test_files.h"
#include "tests/launcher/test_workspace.h"

using namespace air::launcher;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

using air::launcher_test::TempDir;

std::string slurp(const fs::path& p) { return air::launcher_test::read_file(p); }

struct Agent {
  air::test::TestWorkspace ws;
  TempDir dir;
  NodeAgentOptions options;

  explicit Agent(const std::string& command, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json spec = {{"run_id", "run-s"}, {"attempt", 1}, {"node_rank", 0}, {"num_nodes", 1},
                           {"command", command}, {"env", nlohmann::json::object()}, {"parameters_yaml", ""}};
    spec.update(extra);
    ws.node("run-s", 1, 0).spec = spec;
    options = air::launcher_test::agent_options(ws, "run-s", 1, 0, (dir.path / "node0").string());
  }
  air::test::TestWorkspace::Node node() { return ws.snapshot_of("run-s", 1, 0); }
};

// Every form a leak could take, for the byte-level checks.
std::vector<std::string> forms(const std::string& v) {
  return {v, air::base64_encode(v), air::base64_encode(v, air::Base64Alphabet::kUrl, false), air::percent_encode(v)};
}

void check_nowhere(const std::string& what, const std::string& bytes, const std::string& value) {
  INFO(what);
  for (const auto& f : forms(value)) CHECK(bytes.find(f) == std::string::npos);
}

}  // namespace

TEST_CASE("agent: the command gets its secrets, and the log, spool, agent log and reports never hold them", "[agent]") {
  const std::string value = "hf_S3cret/Value+With:Symbols@42";
  Agent a(R"SH(
echo "plain $HF_TOKEN"
printf 'split %s' "${HF_TOKEN:0:9}"; sleep 0.3; printf '%s!\n' "${HF_TOKEN:9}"
echo "b64 $(printf %s "$HF_TOKEN" | base64 -w0)"
echo "url $(python3 -c 'import os, urllib.parse; print(urllib.parse.quote(os.environ["HF_TOKEN"], safe=""))')"
echo "err $HF_TOKEN" >&2
[ "$(printf %s "$HF_TOKEN" | sha256sum | cut -d' ' -f1)" = "$WANT" ] && echo saw-the-value
echo "run=$MLFLOW_RUN_ID uri=$MLFLOW_TRACKING_URI"
echo "token $MLFLOW_TRACKING_TOKEN"
echo "last $HF_TOKEN"
exit 3
)SH",
          {{"secrets", {{{"name", "HF_TOKEN"}, {"scope", "my_scope"}, {"key", "hf_token"}}}},
           {"env", {{"WANT", air::sha256_hex(value)}}},
           {"mlflow_run_id", "abc123"}});
  a.ws.secrets["my_scope/hf_token"] = value;
  CHECK(run_node_agent(a.options) == 1);
  auto n = a.node();
  INFO(n.log);
  CHECK(n.log.find(" o plain [REDACTED]\n") != std::string::npos);
  CHECK(n.log.find(" o split [REDACTED]!\n") != std::string::npos);
  CHECK(n.log.find(" o b64 [REDACTED]\n") != std::string::npos);
  CHECK(n.log.find(" o url [REDACTED]\n") != std::string::npos);
  CHECK(n.log.find(" e err [REDACTED]\n") != std::string::npos);
  CHECK(n.log.find(" o saw-the-value\n") != std::string::npos);
  CHECK(n.log.find(" o run=abc123 uri=" + a.ws.url() + "\n") != std::string::npos);
  CHECK(n.log.find(" o token [REDACTED]\n") != std::string::npos);  // the node token is redacted too
  check_nowhere("stored log", n.log, value);
  check_nowhere("spool file", slurp(fs::path(a.options.workdir) / "log.spool"), value);
  check_nowhere("agent log", slurp(fs::path(a.options.workdir) / "agent.log"), value);
  std::string reports;
  for (const auto& s : n.statuses) reports += s.dump();
  CHECK(reports.find("last [REDACTED]") != std::string::npos);  // the failure's last lines
  check_nowhere("status reports", reports, value);
  CHECK(n.log.find(a.ws.token()) == std::string::npos);
}

TEST_CASE("agent: a secret that cannot be resolved fails the node naming it, and the command never runs", "[agent]") {
  Agent a("echo ran > ran.txt",
          {{"secrets", {{{"name", "HF_TOKEN"}, {"scope", "my_scope"}, {"key", "hf_token"}},
                        {{"name", "MISSING"}, {"scope", "my_scope"}, {"key", "nope"}}}}});
  a.ws.secrets["my_scope/hf_token"] = "a-value-that-must-not-show";
  CHECK(run_node_agent(a.options) == 1);
  auto n = a.node();
  REQUIRE_FALSE(n.statuses.empty());
  auto last = n.statuses.back();
  CHECK(last["state"] == "FAILED");
  std::string msg = last["message"];
  CHECK(msg.find("MISSING (my_scope/nope)") != std::string::npos);
  CHECK(msg.find("a-value-that-must-not-show") == std::string::npos);
  CHECK_FALSE(fs::exists(fs::path(a.options.workdir) / "code" / "ran.txt"));
  check_nowhere("agent log", slurp(fs::path(a.options.workdir) / "agent.log"), "a-value-that-must-not-show");
}

TEST_CASE("agent: a workload's own MLFLOW_TRACKING_URI is left alone", "[agent]") {
  Agent a("echo \"uri=$MLFLOW_TRACKING_URI run=${MLFLOW_RUN_ID:-none}\"",
          {{"env", {{"MLFLOW_TRACKING_URI", "databricks"}}}, {"mlflow_run_id", "abc123"}});
  CHECK(run_node_agent(a.options) == 0);
  CHECK(a.node().log.find(" o uri=databricks run=none\n") != std::string::npos);
}

TEST_CASE("agent: a failed pip install fails the node with pip's output in the log and a summary", "[agent]") {
  TempDir home;
  const char* old = std::getenv("AIR_HOME");
  std::string saved = old ? old : "";
  ::setenv("AIR_HOME", home.path.c_str(), 1);
  Agent a("echo should-not-run", {{"dependencies", {"./no-such-package-dir"}}, {"environment_version", "4"}});
  int code = run_node_agent(a.options);
  if (old) ::setenv("AIR_HOME", saved.c_str(), 1);
  else ::unsetenv("AIR_HOME");
  CHECK(code == 1);
  auto n = a.node();
  INFO(n.log);
  CHECK(n.log.find("no-such-package-dir") != std::string::npos);
  CHECK(n.log.find("should-not-run") == std::string::npos);
  std::string msg = n.statuses.back()["message"];
  CHECK(msg.rfind("installing environment.dependencies failed: pip exited with code 1", 0) == 0);
}
