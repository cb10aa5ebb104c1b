// Shell completion from the command tree (`air __complete`), the scripts, program-named usage lines and
// the colour convention (--color, NO_COLOR). The scripts in real shells: tests/e2e/shell_completion.sh.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <sstream>

#include "cli/app.h"
#include "cli/completion/completion.h"
#include "cli/format.h"

namespace {

struct Result {
  int code;
  std::string out, err;
};

Result air_cli(std::vector<std::string> args) {
  static const bool hermetic = [] {  // no workspace: run ids must come back empty, not start a daemon
    ::setenv("AIR_HOME", "/nonexistent/air-completion-test-home", 1);
    ::setenv("AIR_CONFIG_FILE", "/nonexistent/air-completion-test-config", 1);
    ::setenv("DATABRICKS_CONFIG_FILE", "/nonexistent/air-completion-test-databrickscfg", 1);
    ::unsetenv("AIR_HOST");
    return true;
  }();
  (void)hermetic;
  args.insert(args.begin(), "air");
  std::ostringstream out, err;
  int code = air::cli::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

std::string complete(std::vector<std::string> words) {
  words.insert(words.begin(), "__complete");
  Result r = air_cli(words);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  return r.out;
}

}  // namespace

TEST_CASE("completion: verbs from the command tree, filtered by the word typed so far") {
  CHECK(complete({"ge"}) == "get\n");
  CHECK(complete({"s"}) == "server\nsecrets\n");
  std::string all = complete({""});
  for (const char* verb : {"run\n", "get\n", "logs\n", "list\n", "cancel\n", "secrets\n", "completion\n"})
    CHECK(all.find(verb) != std::string::npos);
  CHECK(complete({"secrets", "put"}) == "put-secret\nput-acl\n");
  CHECK(complete({"secrets", "list-a"}) == "list-acls\n");
  CHECK(complete({"users", ""}) == "add\nlist\nremove\n");
  CHECK(complete({"server", "st"}) == "status\nstop\n");
}

TEST_CASE("completion: flags of the verb and the global ones, values of -o, --color and --backend") {
  std::string flags = complete({"logs", "--"});
  for (const char* f : {"--node\n", "--tail\n", "--all-nodes\n", "--output\n", "--color\n"})
    CHECK(flags.find(f) != std::string::npos);
  CHECK(flags.find("--dry-run") == std::string::npos);  // run's, not logs'
  CHECK(complete({"logs", "--ta"}) == "--tail\n");
  CHECK(complete({"-o", ""}) == "text\njson\n");
  CHECK(complete({"get", "-o", "j"}) == "json\n");
  CHECK(complete({"--output=t"}) == "--output=text\n");
  CHECK(complete({"--color", ""}) == "auto\nalways\nnever\n");
  CHECK(complete({"server", "--backend", ""}) == "local\nslurm\nexternal\n");  // external: bench/server_load.sh
  CHECK(complete({"completion", ""}) == "bash\nzsh\nfish\n");
  // A hidden flag (the daemon's own) is not offered.
  CHECK(complete({"server", "--"}).find("--daemon") == std::string::npos);
}

TEST_CASE("completion: files for -f, folders for --download-to, 'run' then run ids for get") {
  CHECK(complete({"run", "-f", ""}) == ":files\n");
  CHECK(complete({"run", "--file", "ex"}) == ":files\n");
  CHECK(complete({"logs", "--download-to", ""}) == ":dirs\n");
  CHECK(complete({"get", ""}) == "run\n");  // no workspace runs here: no ids, and none started
  // After a value-taking flag's value, positionals again.
  CHECK(complete({"-o", "json", "g"}) == "get\ngroups\n");
}

TEST_CASE("completion: run ids where a run id fits (logs, cancel, get run), from the workspace") {
  CLI::App app{"test", "air"};
  std::string id, out;
  std::vector<std::string> ids, args;
  app.add_option("-o,--output", out)->check(CLI::IsMember({"text", "json"}));
  app.add_subcommand("logs")->add_option("id", id)->type_name("RUN_ID");
  app.add_subcommand("cancel")->add_option("ids", ids)->type_name("RUN_ID");
  auto* get = app.add_subcommand("get");
  get->add_option("args", args)->type_name("run|RUN_ID");
  int asked = 0;
  auto runs = [&asked] {
    ++asked;
    return std::vector<std::string>{"a1b2c3", "a9f0e1", "77de01"};
  };
  using V = std::vector<std::string>;
  CHECK(air::cli::complete_words(app, {"logs", ""}, runs).words == V{"a1b2c3", "a9f0e1", "77de01"});
  CHECK(air::cli::complete_words(app, {"logs", "a"}, runs).words == V{"a1b2c3", "a9f0e1"});
  CHECK(air::cli::complete_words(app, {"cancel", "a1b2c3", "7"}, runs).words == V{"77de01"});
  CHECK(air::cli::complete_words(app, {"get", "run", "77"}, runs).words == V{"77de01"});
  CHECK(air::cli::complete_words(app, {"get", "r"}, runs).words == V{"run"});
  CHECK(asked == 5);
  // Only where a run id fits: not for verbs or flag values.
  CHECK(air::cli::complete_words(app, {"l"}, runs).words == V{"logs"});
  CHECK(air::cli::complete_words(app, {"logs", "-o", ""}, runs).words == V{"text", "json"});
  CHECK(asked == 5);
}

TEST_CASE("completion: air completion prints a script per shell, and an unknown shell is a usage error") {
  Result b = air_cli({"completion", "bash"});
  CHECK(b.code == 0);
  CHECK(b.out.find("complete -F _air_complete air\n") != std::string::npos);
  Result z = air_cli({"completion", "zsh"});
  CHECK(z.code == 0);
  CHECK(z.out.rfind("#compdef air\n", 0) == 0);
  Result f = air_cli({"completion", "fish"});
  CHECK(f.code == 0);
  CHECK(f.out.find("complete -c air -f -a '(__air_complete)'\n") != std::string::npos);
  Result bad = air_cli({"completion", "tcsh"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("tcsh not in {bash,zsh,fish}") != std::string::npos);
}

TEST_CASE("help: every usage line names the program") {
  Result top = air_cli({"--help"});
  CHECK(top.code == 0);
  CHECK(top.out.find("Usage: air [OPTIONS] [SUBCOMMAND]") != std::string::npos);
  Result get = air_cli({"get", "--help"});
  CHECK(get.out.find("Usage: air get [OPTIONS] args...") != std::string::npos);
  Result put = air_cli({"secrets", "put-secret", "--help"});
  CHECK(put.out.find("Usage: air secrets put-secret [OPTIONS] SCOPE KEY") != std::string::npos);
}

TEST_CASE("colour: --color always|never wins, else NO_COLOR (non-empty) turns it off, else a terminal") {
  // A real terminal: the slave side of a pseudo-terminal.
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(tty >= 0);
  int devnull = ::open("/dev/null", O_WRONLY);
  air::cli::Context ctx;
  ::unsetenv("NO_COLOR");
  CHECK(air::cli::use_color(ctx, tty));  // auto
  CHECK_FALSE(air::cli::use_color(ctx, devnull));
  ::setenv("NO_COLOR", "1", 1);
  CHECK_FALSE(air::cli::use_color(ctx, tty));
  ::setenv("NO_COLOR", "", 1);  // set but empty: no-color.org says it does not count
  CHECK(air::cli::use_color(ctx, tty));
  ::setenv("NO_COLOR", "yes", 1);
  ctx.global.color = "always";
  CHECK(air::cli::use_color(ctx, devnull));  // an explicit flag beats the environment and the terminal
  ::unsetenv("NO_COLOR");
  ctx.global.color = "never";
  CHECK_FALSE(air::cli::use_color(ctx, tty));
  ::close(devnull);
  ::close(tty);
  ::close(master);
  Result bad = air_cli({"--color", "sometimes", "list"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("sometimes not in {auto,always,never}") != std::string::npos);
}

TEST_CASE("cli: the tree is built for the named verb only, and every verb still answers as in the whole tree") {
  // `air --help` lists every verb (the whole tree); each must answer its own --help through the one-verb tree
  // with the same usage line, also after global options, and complete as before.
  Result all = air_cli({"--help"});
  REQUIRE(all.code == 0);
  std::vector<std::string> verbs;
  std::istringstream lines(all.out);
  bool in_subcommands = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("SUBCOMMANDS:", 0) == 0 || line.rfind("Subcommands:", 0) == 0) { in_subcommands = true; continue; }
    if (in_subcommands && line.size() > 2 && line[0] == ' ' && line[2] != ' ') {
      std::istringstream w(line);
      std::string name;
      w >> name;
      verbs.push_back(name);
    }
  }
  REQUIRE(verbs.size() >= 10);
  for (const auto& v : verbs) {
    INFO("verb " << v);
    Result help = air_cli({v, "--help"});
    CHECK(help.code == 0);
    CHECK(help.out.find("air " + v) != std::string::npos);
    Result after_globals = air_cli({"-o", "json", "--color", "never", v, "--help"});
    CHECK(after_globals.out == help.out);
    CHECK(complete({v.substr(0, 1)}).find(v + "\n") != std::string::npos);
  }
  CHECK(air_cli({"--version"}).out == std::string("air ") + AIR_VERSION + "\n");
  Result unknown = air_cli({"runn", "-f", "x.yaml"});
  CHECK(unknown.code != 0);
  CHECK(unknown.err.find("runn") != std::string::npos);
}
