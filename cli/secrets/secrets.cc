// `air secrets` subcommands over SecretsClient. Values only travel from the user to the workspace: they
// are read from a hidden prompt, stdin or --string-value, sent, and wiped; nothing here prints one.
#include "cli/secrets/secrets.h"

#include <openssl/crypto.h>
#include <termios.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "core/base/error.h"
#include "core/base/time.h"
#include "core/client/config.h"

namespace air::cli {

namespace {

std::istream* g_in = &std::cin;
int g_in_fd = 0;
std::string g_host;  // `air secrets --host URL`

// `--host URL` (token from AIR_TOKEN, else DATABRICKS_TOKEN: the verb can manage a Databricks workspace's
// secrets), else the workspace every verb uses (air::resolve_workspace: profiles, environment, local).
WorkspaceEndpoint secrets_endpoint(const Context& ctx) {
  if (!g_host.empty()) {
    const char* air = std::getenv("AIR_TOKEN");
    const char* databricks = std::getenv("DATABRICKS_TOKEN");
    std::string token = air && *air ? air : databricks ? databricks : "";
    if (token.empty()) throw usage_error("--host needs a token", "export AIR_TOKEN=<token> (or DATABRICKS_TOKEN)");
    return {normalize_host(g_host), token};
  }
  WorkspaceTarget t = resolve_workspace(ctx.global.profile);
  return {t.url, t.token};
}

// Restores the terminal if Ctrl-C arrives while echo is off, then dies of the signal as usual.
termios g_saved_termios;
int g_saved_fd = -1;
extern "C" void restore_and_reraise(int sig) {
  if (g_saved_fd >= 0) tcsetattr(g_saved_fd, TCSANOW, &g_saved_termios);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string read_hidden_line(int fd, std::ostream& prompt, const std::string& what) {
  prompt << "Enter the secret value for " << what << ": " << std::flush;
  termios old {};
  bool have_termios = tcgetattr(fd, &old) == 0;
  if (have_termios) {
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    g_saved_termios = old;
    g_saved_fd = fd;
    std::signal(SIGINT, restore_and_reraise);
    std::signal(SIGTERM, restore_and_reraise);
    tcsetattr(fd, TCSAFLUSH, &quiet);
  }
  std::string line;
  char c;
  while (true) {
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n' || c == '\r') break;
    line += c;
  }
  if (have_termios) {
    tcsetattr(fd, TCSAFLUSH, &old);
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    g_saved_fd = -1;
  }
  prompt << "\n";
  return line;
}

bool is_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 4;
    if (n == 4 || i + n >= s.size() + (n == 0 ? 1 : 0)) return false;
    for (size_t k = 1; k <= n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n + 1;
  }
  return true;
}

// Runs one client call, turning a bad-input answer into exit code 2.
template <typename F>
void call(F&& f) {
  try {
    f();
  } catch (const SecretsApiError& e) {
    int code = e.code() == "INVALID_PARAMETER_VALUE" || e.code() == "MALFORMED_REQUEST" ? kExitUsage : kExitFailed;
    throw Error(e.what(), e.hint(), code);
  }
}

std::string iso_utc(int64_t ms) {
  if (ms <= 0) return "-";
  return format_utc(ms, TimeFormat::kIso);
}

struct Args {
  std::string scope, key, string_value;
  bool has_string_value = false;
};

void add_create_scope(CLI::App& parent, Context& ctx, const std::shared_ptr<Args>& a) {
  auto* cmd = parent.add_subcommand("create-scope", "Create a secret scope");
  cmd->add_option("NAME", a->scope, "Scope name (letters, digits, '-', '_', '.', '@'; up to 128)")->required();
  cmd->callback([&ctx, a] {
    SecretsClient c(secrets_endpoint(ctx));
    call([&] { c.create_scope(a->scope); });
    if (ctx.global.output == "json") print_json(ctx, nlohmann::json{{"scope", a->scope}});
    else *ctx.out << fmt::format("Created scope {}\n", a->scope);
  });
}

void add_put_secret(CLI::App& parent, Context& ctx, const std::shared_ptr<Args>& a) {
  auto* cmd = parent.add_subcommand("put-secret", "Store a secret (value from a hidden prompt, stdin, or --string-value)");
  cmd->add_option("SCOPE", a->scope, "Scope name")->required();
  cmd->add_option("KEY", a->key, "Secret key (letters, digits, '-', '_', '.'; up to 128)")->required();
  auto* sv = cmd->add_option("--string-value", a->string_value,
                             "The value (visible in shell history and the process list; prefer stdin or the prompt)");
  cmd->callback([&ctx, a, sv] {
    std::string value;
    if (sv->count() > 0) {
      value = a->string_value;
      OPENSSL_cleanse(a->string_value.data(), a->string_value.size());
    } else {
      value = read_secret_value(g_in_fd, *g_in, *ctx.err, a->scope + "/" + a->key);
    }
    if (value.empty()) {
      throw usage_error("the secret value is empty; nothing was stored",
                        "pipe the value in (printf %s \"$TOKEN\" | air secrets put-secret SCOPE KEY) or type it at the prompt");
    }
    SecretsClient c(secrets_endpoint(ctx));
    // Text goes as string_value (Databricks stores it as UTF-8); anything else as bytes_value.
    bool text = is_utf8(value);
    try {
      call([&] { text ? c.put_secret(a->scope, a->key, value) : c.put_secret_bytes(a->scope, a->key, value); });
    } catch (...) {
      OPENSSL_cleanse(value.data(), value.size());
      throw;
    }
    OPENSSL_cleanse(value.data(), value.size());
    if (ctx.global.output == "json") print_json(ctx, nlohmann::json{{"scope", a->scope}, {"key", a->key}});
    else *ctx.out << fmt::format("Stored secret {} in scope {}\n", a->key, a->scope);
  });
}

void add_lists(CLI::App& parent, Context& ctx, const std::shared_ptr<Args>& a) {
  auto* ls = parent.add_subcommand("list-scopes", "List secret scopes");
  ls->callback([&ctx] {
    SecretsClient c(secrets_endpoint(ctx));
    std::vector<SecretScopeInfo> scopes;
    call([&] { scopes = c.list_scopes(); });
    if (ctx.global.output == "json") {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& s : scopes) j.push_back({{"name", s.name}, {"backend_type", s.backend_type}});
      print_json(ctx, nlohmann::json{{"scopes", j}});
      return;
    }
    size_t w = 5;
    for (const auto& s : scopes) w = std::max(w, s.name.size());
    *ctx.out << fmt::format("{:<{}}  {}\n", "Scope", w, "Backend");
    for (const auto& s : scopes) *ctx.out << fmt::format("{:<{}}  {}\n", s.name, w, s.backend_type);
  });
  auto* lk = parent.add_subcommand("list-secrets", "List the keys in a scope (never their values)");
  lk->add_option("SCOPE", a->scope, "Scope name")->required();
  lk->callback([&ctx, a] {
    SecretsClient c(secrets_endpoint(ctx));
    std::vector<SecretInfo> secrets;
    call([&] { secrets = c.list_secrets(a->scope); });
    if (ctx.global.output == "json") {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& s : secrets) j.push_back({{"key", s.key}, {"last_updated_timestamp", s.last_updated_timestamp}});
      print_json(ctx, nlohmann::json{{"scope", a->scope}, {"secrets", j}});
      return;
    }
    size_t w = 3;
    for (const auto& s : secrets) w = std::max(w, s.key.size());
    *ctx.out << fmt::format("{:<{}}  {}\n", "Key", w, "Last updated");
    for (const auto& s : secrets) *ctx.out << fmt::format("{:<{}}  {}\n", s.key, w, iso_utc(s.last_updated_timestamp));
  });
}

void add_deletes(CLI::App& parent, Context& ctx, const std::shared_ptr<Args>& a) {
  auto* ds = parent.add_subcommand("delete-secret", "Delete a secret");
  ds->add_option("SCOPE", a->scope, "Scope name")->required();
  ds->add_option("KEY", a->key, "Secret key")->required();
  ds->callback([&ctx, a] {
    SecretsClient c(secrets_endpoint(ctx));
    call([&] { c.delete_secret(a->scope, a->key); });
    if (ctx.global.output == "json") print_json(ctx, nlohmann::json{{"scope", a->scope}, {"key", a->key}});
    else *ctx.out << fmt::format("Deleted secret {} from scope {}\n", a->key, a->scope);
  });
  auto* dsc = parent.add_subcommand("delete-scope", "Delete a scope and every secret in it");
  dsc->add_option("NAME", a->scope, "Scope name")->required();
  dsc->callback([&ctx, a] {
    SecretsClient c(secrets_endpoint(ctx));
    call([&] { c.delete_scope(a->scope); });
    if (ctx.global.output == "json") print_json(ctx, nlohmann::json{{"scope", a->scope}});
    else *ctx.out << fmt::format("Deleted scope {}\n", a->scope);
  });
}

// Scope ACLs, as Databricks' CLI names them: put-acl SCOPE PRINCIPAL PERMISSION, get-acl, list-acls, delete-acl.
void add_acls(CLI::App& parent, Context& ctx, const std::shared_ptr<Args>& a) {
  auto principal = std::make_shared<std::string>(), permission = std::make_shared<std::string>();
  auto* put = parent.add_subcommand("put-acl", "Grant a user or group READ, WRITE or MANAGE on a scope");
  put->add_option("SCOPE", a->scope, "Scope name")->required();
  put->add_option("PRINCIPAL", *principal, "User or group name")->required();
  put->add_option("PERMISSION", *permission, "READ, WRITE or MANAGE")->required();
  put->callback([&ctx, a, principal, permission] {
    if (*permission != "READ" && *permission != "WRITE" && *permission != "MANAGE")
      throw usage_error("invalid permission '" + *permission + "'", "use READ, WRITE or MANAGE");
    SecretsClient c(secrets_endpoint(ctx));
    call([&] { c.put_acl(a->scope, *principal, *permission); });
    if (ctx.global.output == "json")
      print_json(ctx, nlohmann::json{{"scope", a->scope}, {"principal", *principal}, {"permission", *permission}});
    else *ctx.out << fmt::format("Granted {} on scope {} to {}\n", *permission, a->scope, *principal);
  });
  auto* get = parent.add_subcommand("get-acl", "Show the permission a principal holds on a scope");
  get->add_option("SCOPE", a->scope, "Scope name")->required();
  get->add_option("PRINCIPAL", *principal, "User or group name")->required();
  get->callback([&ctx, a, principal] {
    SecretsClient c(secrets_endpoint(ctx));
    std::string perm;
    call([&] { perm = c.get_acl(a->scope, *principal); });
    if (ctx.global.output == "json") print_json(ctx, nlohmann::json{{"principal", *principal}, {"permission", perm}});
    else *ctx.out << fmt::format("{}  {}\n", *principal, perm);
  });
  auto* list = parent.add_subcommand("list-acls", "List who holds which permission on a scope");
  list->add_option("SCOPE", a->scope, "Scope name")->required();
  list->callback([&ctx, a] {
    SecretsClient c(secrets_endpoint(ctx));
    std::vector<std::pair<std::string, std::string>> acls;
    call([&] { acls = c.list_acls(a->scope); });
    if (ctx.global.output == "json") {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& [p, perm] : acls) j.push_back({{"principal", p}, {"permission", perm}});
      print_json(ctx, nlohmann::json{{"items", j}});
      return;
    }
    size_t w = 9;
    for (const auto& [p, perm] : acls) w = std::max(w, p.size());
    *ctx.out << fmt::format("{:<{}}  {}\n", "Principal", w, "Permission");
    for (const auto& [p, perm] : acls) *ctx.out << fmt::format("{:<{}}  {}\n", p, w, perm);
  });
  auto* del = parent.add_subcommand("delete-acl", "Remove a principal's permission on a scope");
  del->add_option("SCOPE", a->scope, "Scope name")->required();
  del->add_option("PRINCIPAL", *principal, "User or group name")->required();
  del->callback([&ctx, a, principal] {
    SecretsClient c(secrets_endpoint(ctx));
    call([&] { c.delete_acl(a->scope, *principal); });
    if (ctx.global.output == "json") print_json(ctx, nlohmann::json{{"scope", a->scope}, {"principal", *principal}});
    else *ctx.out << fmt::format("Removed {}'s permission on scope {}\n", *principal, a->scope);
  });
}

}  // namespace

std::string read_secret_value(int fd, std::istream& piped, std::ostream& prompt, const std::string& what) {
  if (::isatty(fd)) return read_hidden_line(fd, prompt, what);
  std::ostringstream ss;
  ss << piped.rdbuf();
  std::string v = ss.str();
  if (!v.empty() && v.back() == '\n') v.pop_back();
  if (!v.empty() && v.back() == '\r') v.pop_back();
  return v;
}

void set_secret_input(std::istream* in, int fd) {
  g_in = in ? in : &std::cin;
  g_in_fd = fd;
}

void setup_secrets(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("secrets", "Manage secret scopes and secrets (values are never printed)");
  cmd->require_subcommand(1);
  g_host.clear();
  cmd->add_option("--host", g_host,
                  "Workspace URL, with the token from AIR_TOKEN or DATABRICKS_TOKEN (default: the workspace 'air run' "
                  "uses)");
  auto a = std::make_shared<Args>();
  add_create_scope(*cmd, ctx, a);
  add_put_secret(*cmd, ctx, a);
  add_lists(*cmd, ctx, a);
  add_deletes(*cmd, ctx, a);
  add_acls(*cmd, ctx, a);
  for (auto* sub : cmd->get_subcommands({})) sub->fallthrough();  // --host after the verb works too
}

}  // namespace air::cli
