// `air secrets` end to end in-process: the verb, the client and a real loopback workspace; and the hidden
// prompt on a real pseudo-terminal.
#include <catch2/catch.hpp>
#include <stdlib.h>

#include <fcntl.h>
#include <pty.h>
#include <termios.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <sstream>
#include <thread>

#include "cli/secrets/secrets.h"
#include "server/api/secrets.h"
#include "tests/server/secret_test_server.h"
#include "tests/server/secret_test_util.h"

using namespace air::server;

namespace {

struct CliResult {
  int code = 0;
  std::string out, err;
};

struct Workspace {
  air::test::TempDir dir;
  SecretStore store{dir / "air.db", load_or_create_master_key(dir / "secrets.key")};
  air::test::LoopbackServer server{[this](const std::string& m, const std::string& p, const std::string& b,
                                          const std::string& token) {
    return handle_secrets_request(store, m, p, b, token == "t0k" ? SecretsCaller::admin() : SecretsCaller{});
  }};

  // The verb finds it the way every verb does (core/client/config.h): AIR_HOST + AIR_TOKEN.
  Workspace() {
    ::setenv("AIR_HOST", server.url().c_str(), 1);
    ::setenv("AIR_TOKEN", "t0k", 1);
    ::setenv("AIR_CONFIG_FILE", "/nonexistent/air-secrets-test-config", 1);
    ::setenv("DATABRICKS_CONFIG_FILE", "/nonexistent/air-secrets-test-databrickscfg", 1);
    ::unsetenv("DATABRICKS_CONFIG_PROFILE");
  }
  ~Workspace() {
    ::unsetenv("AIR_HOST");
    ::unsetenv("AIR_TOKEN");
  }

  CliResult run(std::vector<std::string> args, const std::string& stdin_text = "") {
    std::ostringstream out, err;
    air::cli::Context ctx;
    ctx.out = &out;
    ctx.err = &err;
    CLI::App app{"air"};
    app.add_option("-o,--output", ctx.global.output);
    air::cli::setup_secrets(app, ctx);
    std::istringstream in(stdin_text);
    air::cli::set_secret_input(&in, -1);  // not a terminal
    CliResult r;
    std::reverse(args.begin(), args.end());
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      r.code = 2;
      err << "air: error: " << e.what() << "\n";
    } catch (const air::Error& e) {
      r.code = e.exit_code();
      err << "air: error: " << e.what() << "\n";
      if (!e.hint().empty()) err << "  hint: " << e.hint() << "\n";
    }
    air::cli::set_secret_input(nullptr, 0);
    r.out = out.str();
    r.err = err.str();
    return r;
  }
};

}  // namespace

TEST_CASE("air secrets: create put from stdin list delete - no value is ever printed") {
  Workspace w;
  const std::string value = "hf_cli_value_0123456789";
  auto r = w.run({"secrets", "create-scope", "my_scope"});
  CHECK(r.code == 0);
  CHECK(r.out == "Created scope my_scope\n");
  r = w.run({"secrets", "put-secret", "my_scope", "hf_token"}, value + "\n");
  CHECK(r.code == 0);
  CHECK(r.out == "Stored secret hf_token in scope my_scope\n");
  CHECK(w.store.get_secret("my_scope", "hf_token").bytes == value);  // the trailing newline is dropped
  CHECK_FALSE(w.store.get_secret("my_scope", "hf_token").is_bytes);
  r = w.run({"secrets", "put-secret", "my_scope", "flag", "--string-value", "from-flag-value"});
  CHECK(r.code == 0);
  CHECK(w.store.get_secret("my_scope", "flag").bytes == "from-flag-value");
  std::string bin("\xff\xfe\x00 raw", 7);
  r = w.run({"secrets", "put-secret", "my_scope", "bin"}, bin);
  CHECK(r.code == 0);
  CHECK(w.store.get_secret("my_scope", "bin").bytes == bin);
  CHECK(w.store.get_secret("my_scope", "bin").is_bytes);

  r = w.run({"secrets", "list-scopes"});
  CHECK(r.out == "Scope     Backend\nmy_scope  AIR\n");
  r = w.run({"-o", "json", "secrets", "list-scopes"});
  CHECK(nlohmann::json::parse(r.out)["data"] ==
        nlohmann::json::parse(R"({"scopes":[{"name":"my_scope","backend_type":"AIR"}]})"));
  r = w.run({"secrets", "list-secrets", "my_scope"});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("Key       Last updated\nbin       20", 0) == 0);
  r = w.run({"-o", "json", "secrets", "list-secrets", "my_scope"});
  auto j = nlohmann::json::parse(r.out)["data"];
  CHECK(j["secrets"].size() == 3);
  CHECK(j["secrets"][2]["key"] == "hf_token");
  CHECK(r.out.find(value) == std::string::npos);

  r = w.run({"secrets", "delete-secret", "my_scope", "flag"});
  CHECK(r.out == "Deleted secret flag from scope my_scope\n");
  r = w.run({"secrets", "delete-scope", "my_scope"});
  CHECK(r.out == "Deleted scope my_scope\n");
  CHECK(w.store.list_scopes().empty());
}

TEST_CASE("air secrets: errors render once with exit codes and hints") {
  Workspace w;
  w.run({"secrets", "create-scope", "s"});
  auto r = w.run({"secrets", "create-scope", "s"});
  CHECK(r.code == 1);
  CHECK(r.err == "air: error: scope 's' already exists\n");
  r = w.run({"secrets", "put-secret", "nope", "k"}, "VALUE-XYZ");
  CHECK(r.code == 1);
  CHECK(r.err == "air: error: scope 'nope' does not exist\n"
                 "  hint: list what exists with 'air secrets list-scopes' or 'air secrets list-secrets SCOPE'\n");
  r = w.run({"secrets", "put-secret", "s", "bad key"}, "VALUE-XYZ");
  CHECK(r.code == 2);
  CHECK(r.err.find("VALUE-XYZ") == std::string::npos);
  r = w.run({"secrets", "put-secret", "s", "k"}, "");
  CHECK(r.code == 2);
  CHECK(r.err.rfind("air: error: the secret value is empty; nothing was stored\n", 0) == 0);
  r = w.run({"secrets", "delete-secret", "s", "missing"});
  CHECK(r.code == 1);
  r = w.run({"secrets"});
  CHECK(r.code == 2);
}

TEST_CASE("air secrets: the prompt on a terminal does not echo and restores the terminal") {
  int master = -1, slave = -1;
  REQUIRE(openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
  std::ostringstream prompt;
  std::istringstream unused;
  std::string got;
  std::thread reader([&] { got = air::cli::read_secret_value(slave, unused, prompt, "my_scope/hf_token"); });
  // Type only once echo is off, as a person would after seeing the prompt.
  termios t {};
  for (int i = 0; i < 2000; ++i) {
    tcgetattr(slave, &t);
    if (!(t.c_lflag & ECHO)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE_FALSE(t.c_lflag & ECHO);
  const std::string typed = "typed-secret-42\n";
  REQUIRE(::write(master, typed.data(), typed.size()) == static_cast<ssize_t>(typed.size()));
  reader.join();
  CHECK(got == "typed-secret-42");
  CHECK(prompt.str() == "Enter the secret value for my_scope/hf_token: \n");
  tcgetattr(slave, &t);
  CHECK(t.c_lflag & ECHO);  // restored
  // Nothing came back on the terminal's screen side.
  fcntl(master, F_SETFL, O_NONBLOCK);
  char buf[256];
  ssize_t n = ::read(master, buf, sizeof buf);
  std::string screen = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  CHECK(screen.find("typed-secret") == std::string::npos);
  ::close(master);
  ::close(slave);
}

TEST_CASE("air secrets: --host with AIR_TOKEN talks to that workspace instead of the configured one") {
  Workspace w;
  ::setenv("AIR_TOKEN", "wrong-token", 1);
  CliResult bad = w.run({"secrets", "--host", w.server.url(), "list-scopes"});
  CHECK(bad.code == 1);  // the resolver's good token was not used
  CHECK(bad.err.find("a valid access token is required") != std::string::npos);
  ::setenv("AIR_TOKEN", "t0k", 1);
  CliResult ok = w.run({"secrets", "create-scope", "via_host", "--host", w.server.url()});
  CHECK(ok.code == 0);
  CHECK(ok.out == "Created scope via_host\n");
  ::unsetenv("AIR_TOKEN");
  CliResult none = w.run({"secrets", "--host", w.server.url(), "list-scopes"});
  CHECK(none.code == 2);
  CHECK(none.err.find("--host needs a token") != std::string::npos);
}
