// Tests for the Databricks-shaped secrets handler: paths, shapes, error codes and who may read values.
#include <catch2/catch.hpp>

#include "core/base/codec.h"
#include "server/api/secrets.h"
#include "tests/server/secret_test_util.h"

using namespace air::server;
using nlohmann::json;

namespace {

struct Fixture {
  air::test::TempDir dir;
  SecretStore store{dir / "air.db", load_or_create_master_key(dir / "secrets.key")};
  SecretsCaller admin = SecretsCaller::admin();

  ApiReply post(const std::string& op, const json& body, const SecretsCaller& who) {
    return handle_secrets_request(store, "POST", "/api/2.0/secrets/" + op, body.dump(), who);
  }
  ApiReply get(const std::string& op_and_query, const SecretsCaller& who) {
    return handle_secrets_request(store, "GET", "/api/2.0/secrets/" + op_and_query, "", who);
  }
};

}  // namespace

TEST_CASE("secrets API: scopes create list and delete with Databricks shapes") {
  Fixture f;
  auto r = f.post("scopes/create", {{"scope", "my_scope"}, {"initial_manage_principal", "users"}}, f.admin);
  CHECK(r.status == 200);
  CHECK(r.body == json::object());
  r = f.get("scopes/list", f.admin);
  CHECK(r.body == json::parse(R"({"scopes":[{"name":"my_scope","backend_type":"AIR"}]})"));
  r = f.post("scopes/create", {{"scope", "my_scope"}}, f.admin);
  CHECK(r.status == 409);
  CHECK(r.body == json::parse(R"({"error_code":"RESOURCE_ALREADY_EXISTS","message":"scope 'my_scope' already exists"})"));
  r = f.post("scopes/create", {{"scope", "has space"}}, f.admin);
  CHECK(r.status == 400);
  CHECK(r.body["error_code"] == "INVALID_PARAMETER_VALUE");
  r = f.post("scopes/create", json::object(), f.admin);
  CHECK(r.body == json::parse(R"({"error_code":"INVALID_PARAMETER_VALUE","message":"missing required field: scope"})"));
  r = f.post("scopes/delete", {{"scope", "my_scope"}}, f.admin);
  CHECK(r.status == 200);
  r = f.post("scopes/delete", {{"scope", "my_scope"}}, f.admin);
  CHECK(r.status == 404);
  CHECK(r.body["error_code"] == "RESOURCE_DOES_NOT_EXIST");
  CHECK(f.get("scopes/list", f.admin).body == json::parse(R"({"scopes":[]})"));
}

TEST_CASE("secrets API: put list get and delete secrets") {
  Fixture f;
  f.post("scopes/create", {{"scope", "s"}}, f.admin);
  CHECK(f.post("put", {{"scope", "s"}, {"key", "str"}, {"string_value", "hello wörld"}}, f.admin).status == 200);
  CHECK(f.post("put", {{"scope", "s"}, {"key", "bin"}, {"bytes_value", air::base64_encode(std::string("\0\xff", 2))}},
               f.admin).status == 200);
  auto r = f.get("list?scope=s", f.admin);
  REQUIRE(r.body["secrets"].size() == 2);
  CHECK(r.body["secrets"][0]["key"] == "bin");
  CHECK(r.body["secrets"][0]["last_updated_timestamp"].is_number_integer());
  CHECK_FALSE(r.body.dump().find("hello") != std::string::npos);
  r = f.get("get?scope=s&key=str", f.admin);
  CHECK(r.body == json{{"key", "str"}, {"value", air::base64_encode("hello wörld")}});
  r = f.get("get?scope=s&key=bin", f.admin);
  CHECK(r.body["value"] == "AP8=");
  CHECK(f.post("delete", {{"scope", "s"}, {"key", "str"}}, f.admin).status == 200);
  r = f.get("get?scope=s&key=str", f.admin);
  CHECK(r.status == 404);
  CHECK(r.body == json::parse(R"({"error_code":"RESOURCE_DOES_NOT_EXIST","message":"secret 'str' does not exist in scope 's'"})"));
  // Query values are percent-decoded.
  f.post("scopes/create", {{"scope", "a@b.c"}}, f.admin);
  CHECK(f.get("list?scope=a%40b.c", f.admin).status == 200);
}

TEST_CASE("secrets API: bad requests are rejected without echoing values") {
  Fixture f;
  f.post("scopes/create", {{"scope", "s"}}, f.admin);
  auto r = f.post("put", {{"scope", "s"}, {"key", "k"}}, f.admin);
  CHECK(r.body == json::parse(R"({"error_code":"INVALID_PARAMETER_VALUE",
      "message":"exactly one of 'string_value' and 'bytes_value' must be specified"})"));
  r = f.post("put", {{"scope", "s"}, {"key", "k"}, {"string_value", "SECRETA"}, {"bytes_value", "U0VDUkVU"}}, f.admin);
  CHECK(r.body["error_code"] == "INVALID_PARAMETER_VALUE");
  r = f.post("put", {{"scope", "s"}, {"key", "k"}, {"bytes_value", "not base64!SECRET"}}, f.admin);
  CHECK(r.body["message"] == "field 'bytes_value' is not valid base64");
  r = f.post("put", {{"scope", "s"}, {"key", "k"}, {"string_value", std::string(128 * 1024 + 1, 'S')}}, f.admin);
  CHECK(r.body["error_code"] == "INVALID_PARAMETER_VALUE");
  CHECK(r.body["message"].get<std::string>().find("SSSS") == std::string::npos);
  r = f.post("put", {{"scope", "nope"}, {"key", "k"}, {"string_value", "SECRETVALUE"}}, f.admin);
  CHECK(r.status == 404);
  CHECK(r.body.dump().find("SECRETVALUE") == std::string::npos);
  r = handle_secrets_request(f.store, "POST", "/api/2.0/secrets/put", R"({"scope":"s","string_value":"SECRET)", f.admin);
  CHECK(r.body == json::parse(R"({"error_code":"MALFORMED_REQUEST","message":"the request body is not a JSON object"})"));
  r = f.get("put", f.admin);
  CHECK(r.status == 405);
  r = f.get("nothing", f.admin);
  CHECK(r.status == 404);
  CHECK(r.body["error_code"] == "ENDPOINT_NOT_FOUND");
}

TEST_CASE("secrets API: a node token reads only what its run references") {
  Fixture f;
  f.post("scopes/create", {{"scope", "my_scope"}}, f.admin);
  f.post("put", {{"scope", "my_scope"}, {"key", "hf_token"}, {"string_value", "hf_value_1"}}, f.admin);
  f.post("put", {{"scope", "my_scope"}, {"key", "other"}, {"string_value", "other_value"}}, f.admin);
  auto node = SecretsCaller::node({{"my_scope", "hf_token"}}, "admin", {}, true);  // a run of the admin's
  auto r = f.get("get?scope=my_scope&key=hf_token", node);
  CHECK(r.status == 200);
  CHECK(air::base64_decode(r.body["value"]).value() == "hf_value_1");
  r = f.get("get?scope=MY_SCOPE&key=hf_token", node);  // scope names are case-insensitive
  CHECK(r.status == 200);
  r = f.get("get?scope=my_scope&key=other", node);
  CHECK(r.status == 403);
  CHECK(r.body == json::parse(R"({"error_code":"PERMISSION_DENIED","message":"this node token may read only the secrets its run references; my_scope/other is not one of them"})"));
  for (auto op : {"list?scope=my_scope", "scopes/list"}) CHECK(f.get(op, node).status == 403);
  CHECK(f.post("put", {{"scope", "my_scope"}, {"key", "x"}, {"string_value", "y"}}, node).status == 403);
  CHECK(f.post("scopes/delete", {{"scope", "my_scope"}}, node).status == 403);
  auto none = SecretsCaller{};
  r = f.get("get?scope=my_scope&key=hf_token", none);
  CHECK(r.status == 401);
  CHECK(r.body["error_code"] == "UNAUTHENTICATED");
}
