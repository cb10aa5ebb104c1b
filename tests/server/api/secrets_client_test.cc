// The secrets client against a real loopback HTTP server that routes to handle_secrets_request.
#include <catch2/catch.hpp>

#include "core/secrets/client.h"
#include "server/api/secrets.h"
#include "tests/server/secret_test_server.h"
#include "tests/server/secret_test_util.h"

using namespace air::server;

namespace {

struct Workspace {
  air::test::TempDir dir;
  SecretStore store{dir / "air.db", load_or_create_master_key(dir / "secrets.key")};
  air::test::LoopbackServer server{[this](const std::string& m, const std::string& p, const std::string& b,
                                          const std::string& token) {
    SecretsCaller who;
    if (token == "admin-token") who = SecretsCaller::admin();
    if (token == "node-token") who = SecretsCaller::node({{"my_scope", "hf_token"}}, "admin", {}, true);
    return handle_secrets_request(store, m, p, b, who);
  }};
};

template <typename F>
air::SecretsApiError api_error(F&& f) {
  try {
    f();
  } catch (const air::SecretsApiError& e) {
    return e;
  }
  FAIL("no SecretsApiError thrown");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("secrets client: full lifecycle against a loopback workspace") {
  Workspace w;
  air::SecretsClient c({w.server.url(), "admin-token"});
  CHECK(c.list_scopes().empty());
  c.create_scope("my_scope");
  auto scopes = c.list_scopes();
  REQUIRE(scopes.size() == 1);
  CHECK(scopes[0].name == "my_scope");
  CHECK(scopes[0].backend_type == "AIR");
  c.put_secret("my_scope", "hf_token", "hf_real_value_123");
  std::string bin("\x00\x01\x02\xfe\xff", 5);
  c.put_secret_bytes("my_scope", "bin", bin);
  auto list = c.list_secrets("my_scope");
  REQUIRE(list.size() == 2);
  CHECK(list[1].key == "hf_token");
  CHECK(list[1].last_updated_timestamp > 0);
  CHECK(c.get_secret("my_scope", "hf_token") == "hf_real_value_123");
  CHECK(c.get_secret("my_scope", "bin") == bin);
  c.delete_secret("my_scope", "bin");
  CHECK(c.list_secrets("my_scope").size() == 1);
  c.delete_scope("my_scope");
  CHECK(c.list_scopes().empty());
}

TEST_CASE("secrets client: errors carry the Databricks code and never the value") {
  Workspace w;
  air::SecretsClient c({w.server.url(), "admin-token"});
  c.create_scope("s");
  auto e = api_error([&] { c.create_scope("s"); });
  CHECK(e.code() == "RESOURCE_ALREADY_EXISTS");
  CHECK(e.http_status() == 409);
  CHECK(std::string(e.what()) == "scope 's' already exists");
  e = api_error([&] { c.put_secret("missing", "k", "VALUE-NEVER-SHOWN"); });
  CHECK(e.code() == "RESOURCE_DOES_NOT_EXIST");
  CHECK(std::string(e.what()) == "scope 'missing' does not exist");
  CHECK(std::string(e.hint()).find("list-scopes") != std::string::npos);
  e = api_error([&] { c.put_secret("s", "bad key", "VALUE-NEVER-SHOWN"); });
  CHECK(e.code() == "INVALID_PARAMETER_VALUE");
  CHECK(std::string(e.what()).find("VALUE-NEVER-SHOWN") == std::string::npos);
  e = api_error([&] { c.get_secret("s", "nope"); });
  CHECK(e.code() == "RESOURCE_DOES_NOT_EXIST");
  air::SecretsClient anon({w.server.url(), "wrong"});
  e = api_error([&] { anon.list_scopes(); });
  CHECK(e.code() == "UNAUTHENTICATED");
  CHECK(e.http_status() == 401);
}

TEST_CASE("secrets client: a node token gets its run's secret and nothing else") {
  Workspace w;
  air::SecretsClient admin({w.server.url(), "admin-token"});
  admin.create_scope("my_scope");
  admin.put_secret("my_scope", "hf_token", "hf_for_the_node");
  admin.put_secret("my_scope", "other", "not_for_the_node");
  air::SecretsClient node({w.server.url(), "node-token"});
  CHECK(node.get_secret("my_scope", "hf_token") == "hf_for_the_node");
  CHECK(api_error([&] { node.get_secret("my_scope", "other"); }).code() == "PERMISSION_DENIED");
  CHECK(api_error([&] { node.list_secrets("my_scope"); }).code() == "PERMISSION_DENIED");
}

TEST_CASE("secrets client: an unreachable workspace is a clear error") {
  int port;
  {
    air::test::LoopbackServer s{[](auto&&...) { return ApiReply{}; }};
    port = std::stoi(s.url().substr(s.url().rfind(':') + 1));
  }
  air::SecretsClient c({"http://127.0.0.1:" + std::to_string(port), "t"}, 2000);
  try {
    c.list_scopes();
    FAIL("no error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()) == "cannot reach workspace at http://127.0.0.1:" + std::to_string(port) +
                                       ": connection refused");
  }
}

TEST_CASE("resolve_secrets returns every value or lists every failure without values") {
  Workspace w;
  air::SecretsClient admin({w.server.url(), "admin-token"});
  admin.create_scope("my_scope");
  admin.put_secret("my_scope", "hf_token", "hf_resolved_value");
  admin.put_secret("my_scope", "other", "other_value_xyz");
  air::SecretsClient node({w.server.url(), "node-token"});
  auto values = air::resolve_secrets(node, {{"HF_TOKEN", "my_scope", "hf_token"}});
  CHECK(values == std::map<std::string, std::string>{{"HF_TOKEN", "hf_resolved_value"}});
  try {
    air::resolve_secrets(admin, {{"HF_TOKEN", "my_scope", "hf_token"}, {"A", "my_scope", "missing"}, {"B", "nope", "k"}});
    FAIL("no error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()) ==
          "cannot resolve 2 of 3 secrets:\n"
          "  A (my_scope/missing): secret 'missing' does not exist in scope 'my_scope'\n"
          "  B (nope/k): scope 'nope' does not exist");
  }
  try {
    air::resolve_secrets(node, {{"X", "my_scope", "other"}});
    FAIL("no error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()).find("other_value_xyz") == std::string::npos);
    CHECK(std::string(e.what()).find("this node token may read only the secrets its run references; my_scope/other is not one of them") != std::string::npos);
  }
}
