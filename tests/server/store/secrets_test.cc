// Tests for the master key file and the encrypted secret store, on real files and a real SQLite database.
#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "core/base/codec.h"
#include "server/store/master_key.h"
#include "server/store/secrets.h"
#include "tests/server/secret_test_util.h"

using namespace air::server;
using air::test::TempDir;

namespace {

std::string key_bytes(const MasterKey& k) { return std::string(reinterpret_cast<const char*>(k.data()), 32); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const air::Error& e) {
    return e.what();
  }
  return "no error";
}

std::string code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SecretError& e) {
    return e.code();
  }
  return "no error";
}

}  // namespace

TEST_CASE("master key is created once with mode 0600 and read back unchanged") {
  TempDir dir;
  std::string path = master_key_path_for(dir / "air.db");
  CHECK(path == dir / "secrets.key");
  MasterKey a = load_or_create_master_key(path);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_size == 32);
  MasterKey b = load_or_create_master_key(path);
  CHECK(key_bytes(a) == key_bytes(b));
  CHECK(key_bytes(a) != std::string(32, '\0'));
  // No temporary file is left behind.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  CHECK(files == 1);
}

TEST_CASE("master key creators racing on one path all get the same key") {
  TempDir dir;
  std::string path = dir / "secrets.key";
  std::vector<std::string> got(8);
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) ts.emplace_back([&, i] { got[i] = key_bytes(load_or_create_master_key(path)); });
  for (auto& t : ts) t.join();
  for (const auto& g : got) CHECK(g == got[0]);
}

TEST_CASE("master key with loose permissions a wrong size or a symlink is refused") {
  TempDir dir;
  std::string path = dir / "secrets.key";
  load_or_create_master_key(path);
  ::chmod(path.c_str(), 0644);
  CHECK(error_of([&] { load_or_create_master_key(path); }) ==
        "master key " + path + " is accessible by group or others (mode 644); refusing to use it");
  ::chmod(path.c_str(), 0600);
  CHECK_NOTHROW(load_or_create_master_key(path));
  std::string link = dir / "link.key";
  REQUIRE(::symlink(path.c_str(), link.c_str()) == 0);
  CHECK(error_of([&] { load_or_create_master_key(link); }) ==
        "master key " + link + " is a symbolic link; refusing to use it");
  std::string shortk = dir / "short.key";
  { std::ofstream(shortk) << "too short"; }
  ::chmod(shortk.c_str(), 0600);
  CHECK(error_of([&] { load_or_create_master_key(shortk); }) == "master key " + shortk + " is not 32 bytes long");
}

TEST_CASE("secret store round-trips string and binary values and lists metadata only") {
  TempDir dir;
  SecretStore s(dir / "air.db", load_or_create_master_key(dir / "secrets.key"));
  s.create_scope("my_scope");
  s.create_scope("other.scope@x");
  CHECK(s.list_scopes() == std::vector<std::string>{"my_scope", "other.scope@x"});
  s.put_secret("my_scope", "hf_token", "hf_abcdefghijklmnop", false);
  std::string bin("\x00\x01\xff\x00zz", 6);
  s.put_secret("my_scope", "bin.key-1", bin, true);
  auto v = s.get_secret("my_scope", "hf_token");
  CHECK(v.bytes == "hf_abcdefghijklmnop");
  CHECK_FALSE(v.is_bytes);
  auto b = s.get_secret("MY_SCOPE", "bin.key-1");  // scope names are case-insensitive, like Databricks
  CHECK(b.bytes == bin);
  CHECK(b.is_bytes);
  auto list = s.list_secrets("my_scope");
  REQUIRE(list.size() == 2);
  CHECK(list[0].key == "bin.key-1");
  CHECK(list[1].key == "hf_token");
  CHECK(list[1].last_updated_timestamp > 1700000000000);
  s.put_secret("my_scope", "hf_token", "new-value", false);  // overwrite
  CHECK(s.get_secret("my_scope", "hf_token").bytes == "new-value");
  s.put_secret("my_scope", "empty", "", false);
  CHECK(s.get_secret("my_scope", "empty").bytes.empty());
  s.delete_secret("my_scope", "bin.key-1");
  CHECK(s.list_secrets("my_scope").size() == 2);
  s.delete_scope("my_scope");
  CHECK(s.list_scopes() == std::vector<std::string>{"other.scope@x"});
}

TEST_CASE("secret store reports Databricks error codes without values") {
  TempDir dir;
  SecretStore s(dir / "air.db", load_or_create_master_key(dir / "secrets.key"));
  s.create_scope("s1");
  CHECK(code_of([&] { s.create_scope("S1"); }) == "RESOURCE_ALREADY_EXISTS");
  CHECK(code_of([&] { s.create_scope("bad scope"); }) == "INVALID_PARAMETER_VALUE");
  CHECK(code_of([&] { s.create_scope(std::string(129, 'a')); }) == "INVALID_PARAMETER_VALUE");
  CHECK_NOTHROW(s.create_scope(std::string(128, 'a')));
  CHECK(code_of([&] { s.put_secret("nope", "k", "v", false); }) == "RESOURCE_DOES_NOT_EXIST");
  CHECK(code_of([&] { s.put_secret("s1", "bad@key", "v", false); }) == "INVALID_PARAMETER_VALUE");
  CHECK(code_of([&] { s.get_secret("s1", "missing"); }) == "RESOURCE_DOES_NOT_EXIST");
  CHECK(code_of([&] { s.delete_secret("s1", "missing"); }) == "RESOURCE_DOES_NOT_EXIST");
  CHECK(code_of([&] { s.delete_scope("missing"); }) == "RESOURCE_DOES_NOT_EXIST");
  CHECK(code_of([&] { s.list_secrets("missing"); }) == "RESOURCE_DOES_NOT_EXIST");
  std::string big(air::server::kMaxSecretValueBytes + 1, 'Q');
  std::string msg = error_of([&] { s.put_secret("s1", "big", big, false); });
  CHECK(msg == "the value of secret 'big' in scope 's1' is 131073 bytes, over the 131072 byte limit");
  CHECK_NOTHROW(s.put_secret("s1", "big", big.substr(1), false));
  CHECK(s.exists({"s1", "big"}));
  CHECK_FALSE(s.exists({"s1", "nope"}));
  auto missing = s.missing({{"s1", "big"}, {"s1", "nope"}, {"x", "y"}, {"s1", "nope"}});
  REQUIRE(missing.size() == 2);
  CHECK(missing[0] == air::server::SecretRef{"s1", "nope"});
  CHECK(missing[1] == air::server::SecretRef{"x", "y"});
}

TEST_CASE("grep of the database and its WAL finds no stored value and no key") {
  TempDir dir;
  const std::string value = "hf_GREP_ME_0123456789_abcdefghijklmnopqrstuvwxyz";
  const std::string bin_value = "\x7f\x45\x4c\x46 binary secret \x01\x02\x03 with tail";
  std::string key;
  {
    SecretStore s(dir / "air.db", load_or_create_master_key(dir / "secrets.key"));
    key = key_bytes(load_or_create_master_key(dir / "secrets.key"));
    s.create_scope("my_scope");
    s.put_secret("my_scope", "hf_token", value, false);
    s.put_secret("my_scope", "bin", bin_value, true);
    s.put_secret("my_scope", "hf_token", value, false);  // rewrites leave no old copy either
    // Read while the WAL is live (the store's connection is still open).
    std::string wal = air::test::read_file(dir / "air.db-wal");
    CHECK(wal.size() > 0);
    CHECK(wal.find(value) == std::string::npos);
    CHECK(wal.find(bin_value) == std::string::npos);
    CHECK(wal.find(air::base64_encode(value)) == std::string::npos);
    CHECK(wal.find("my_scope") != std::string::npos);  // the grep would find what is really there
  }
  for (const auto& f : {dir / "air.db", dir / "air.db-wal"}) {
    std::string bytes = air::test::read_file(f);
    INFO(f);
    CHECK(bytes.find(value) == std::string::npos);
    CHECK(bytes.find(bin_value) == std::string::npos);
    CHECK(bytes.find(air::base64_encode(value)) == std::string::npos);
    CHECK(bytes.find(key) == std::string::npos);
  }
  // And the value does come back after a reopen.
  SecretStore again(dir / "air.db", load_or_create_master_key(dir / "secrets.key"));
  CHECK(again.get_secret("my_scope", "hf_token").bytes == value);
}

TEST_CASE("a wrong master key or a moved ciphertext fails to decrypt naming no value") {
  TempDir dir;
  {
    SecretStore s(dir / "air.db", load_or_create_master_key(dir / "secrets.key"));
    s.create_scope("sc");
    s.put_secret("sc", "a", "value-of-a-1234", false);
    s.put_secret("sc", "b", "value-of-b-5678", false);
  }
  SecretStore other(dir / "air.db", load_or_create_master_key(dir / "other.key"));
  std::string msg = error_of([&] { other.get_secret("sc", "a"); });
  CHECK(msg == "secret sc/a cannot be decrypted: the master key does not match or the row was altered");
  // Copy b's ciphertext onto a: the associated data (scope/key) no longer matches.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir / "air.db").c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE secret_values SET sealed = (SELECT sealed FROM secret_values WHERE key='b') "
                           "WHERE key='a'", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  SecretStore s(dir / "air.db", load_or_create_master_key(dir / "secrets.key"));
  CHECK(s.get_secret("sc", "b").bytes == "value-of-b-5678");
  msg = error_of([&] { s.get_secret("sc", "a"); });
  CHECK(msg.find("cannot be decrypted") != std::string::npos);
  CHECK(msg.find("value-of") == std::string::npos);
}

TEST_CASE("migrate_secrets is idempotent on a shared connection") {
  TempDir dir;
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir / "air.db").c_str(), &db) == SQLITE_OK);
  migrate_secrets(db);
  migrate_secrets(db);
  sqlite3_close(db);
  SecretStore s(dir / "air.db", load_or_create_master_key(dir / "secrets.key"));
  s.create_scope("x");
  CHECK(s.list_scopes().size() == 1);
}
