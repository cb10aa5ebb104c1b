// Builds the `air` command tree and turns every failure into one rendered error and a stable exit code.
#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/completion/completion.h"
#include "cli/output.h"
#include "cli/run/submit.h"
#include "cli/run/secret_check.h"
#include "cli/secrets/secrets.h"
#include "cli/sched/sched.h"
#include "cli/verbs.h"
#include "core/base/edit_distance.h"
#include "core/base/error.h"

namespace air::cli {

namespace {

void render_error(std::ostream& err, const air::Error& e) {
  err << "air: error: " << e.what() << "\n";
  if (!e.hint().empty()) err << "  hint: " << e.hint() << "\n";
}

// The verbs, by the name each adds to the tree (a setup function that adds several is listed under each
// name). The tree is built for the one verb a command line names: CLI11 spends ~1.5 M instructions building all of it, most of `air --version` once the libraries are static
// (bench/cli_startup.sh). Help, completion of the verb itself and unknown verbs still see every verb.
struct Verb {
  const char* name;
  void (*setup)(CLI::App&, Context&);
};
constexpr Verb kVerbs[] = {
    {"run", setup_run},       {"get", setup_get},         {"logs", setup_logs},
    {"list", setup_list},     {"cancel", setup_cancel},   {"server", setup_server},
    {"node", setup_node},     {"secrets", setup_secrets}, {"ui", setup_ui},
    {"completion", setup_completion}, {"fs", setup_fs},   {"auth", setup_auth},
    {"users", setup_team},    {"groups", setup_team},     {"tokens", setup_team},
    {"audit", setup_team},    {"volumes", setup_volumes},
    {"quotas", setup_quotas}, {"usage", setup_usage},
};

const Verb* find_verb(const std::string& name) {
  for (const auto& v : kVerbs)
    if (name == v.name) return &v;
  return nullptr;
}

// Where the command line's first bare word (the verb) is, skipping the root's own options and their values
// (add_globals: which take a value is CLI11's to say, so a global option added later needs no change here);
// words.size() when there is none (`air --version`, `air -h`, or a `--` first).
size_t verb_index(const CLI::App& root, const std::vector<std::string>& words) {
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--") return words.size();
    if (!w.empty() && w[0] == '-') {
      const CLI::Option* o = w.find('=') == std::string::npos ? root.get_option_no_throw(w) : nullptr;
      if (o != nullptr && o->get_type_size() != 0) ++i;  // its value is the next word
      continue;
    }
    return i;
  }
  return words.size();
}

// What part of the tree a command line needs: one verb, every verb, or (`air --version`) none.
struct TreeNeed {
  enum Kind { kAll, kOne, kNone } kind = kAll;
  const Verb* verb = nullptr;
};

TreeNeed tree_need(const CLI::App& root, const std::vector<std::string>& words) {
  const size_t at = verb_index(root, words);
  bool version = false;
  for (size_t i = 0; i < at; ++i) {
    if (words[i] == "-h" || words[i] == "--help" || words[i] == "--help-all") return {};
    if (words[i] == "--version") version = true;
  }
  if (at == words.size()) return version ? TreeNeed{TreeNeed::kNone, nullptr} : TreeNeed{};
  const Verb* v = find_verb(words[at]);
  if (v == nullptr) return {};  // run_cli refuses an unknown verb before parsing (unknown_verb_error)
  return {TreeNeed::kOne, v};
}

// `air nosuchverb [--help]`: a usage error naming the word, with the closest verb as a hint. Checked before
// CLI11 parses, which would otherwise answer a --help anywhere on the line with the top-level help (exit 0).
std::optional<air::Error> unknown_verb_error(const CLI::App& root, const std::vector<std::string>& words) {
  const size_t at = verb_index(root, words);
  if (at == words.size() || find_verb(words[at]) != nullptr) return std::nullopt;
  const std::string& w = words[at];
  std::vector<std::string> names;
  for (const auto& v : kVerbs) names.emplace_back(v.name);
  std::string near = closest_match(w, names);
  return usage_error("unknown command '" + w + "'",
                     (near.empty() ? std::string() : "did you mean '" + near + "'? ") + "run 'air --help' for the commands");
}

void add_globals(CLI::App& app, Context& ctx) {
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("air ") + AIR_VERSION);
  app.add_option("-o,--output", ctx.global.output, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  app.add_option("-p,--profile", ctx.global.profile,
                 "Profile of ~/.databrickscfg or ~/.air/config (default: DATABRICKS_CONFIG_PROFILE, see 'air auth')");
  app.add_option("--color", ctx.global.color, "Colour: auto (a terminal, and NO_COLOR unset), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->default_val("auto");
  app.add_flag("--debug", ctx.global.debug, "Print debugging details");
}

void add_verbs(CLI::App& app, Context& ctx, const TreeNeed& need) {
  if (need.kind == TreeNeed::kOne) need.verb->setup(app, ctx);
  if (need.kind == TreeNeed::kAll) {
    // One setup function may add several verbs (listed once per name above): each runs once.
    std::vector<void (*)(CLI::App&, Context&)> done;
    for (const auto& v : kVerbs) {
      if (std::find(done.begin(), done.end(), v.setup) != done.end()) continue;
      done.push_back(v.setup);
      v.setup(app, ctx);
    }
  }
  // Global flags may follow the verb too (`air get run ID -o json`), as users of kubectl and gh expect.
  std::function<void(CLI::App*)> allow_globals_after = [&](CLI::App* a) {
    for (auto* sub : a->get_subcommands({})) {
      sub->fallthrough();
      allow_globals_after(sub);
    }
  };
  allow_globals_after(&app);
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Context ctx;
  ctx.out = &out;
  ctx.err = &err;
  // The name makes every usage line read `Usage: air ...`, also when air is called through a path.
  CLI::App app{"air: run ML training workloads on one machine or many", "air"};

  // `air __complete WORDS...` answers the completion scripts (cli/completion/completion.h); never a parse error.
  // The word being completed (the last) may be a verb's prefix: only the words before it choose the tree.
  if (args.size() >= 2 && args[1] == "__complete") {
    std::vector<std::string> words(args.begin() + 2, args.end());
    add_globals(app, ctx);
    TreeNeed need = words.empty() ? TreeNeed{} : tree_need(app, {words.begin(), words.end() - 1});
    if (need.kind == TreeNeed::kNone) need = {};
    add_verbs(app, ctx, need);
    return run_complete(app, words, ctx);
  }
  add_globals(app, ctx);
  const std::vector<std::string> words(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (auto e = unknown_verb_error(app, words)) {
    render_error(err, *e);
    return e->exit_code();
  }
  add_verbs(app, ctx, tree_need(app, words));

  // `air run -h config.<path>` is field help, not CLI11's -h flag.
  if (int code = 0; run_field_help(args, ctx, &code)) return code;

  std::vector<std::string> rev(args.rbegin(), args.rend());
  if (!rev.empty()) rev.pop_back();  // program name
  try {
    try {
      app.parse(rev);
    } catch (const CLI::CallForHelp&) {
      out << app.help();
      return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
      out << app.help("", CLI::AppFormatMode::All);
      return kExitOk;
    } catch (const CLI::CallForVersion&) {
      out << "air " << AIR_VERSION << "\n";
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      err << "air: error: " << e.what() << "\n  hint: run 'air --help' for usage\n";
      return kExitUsage;
    }
    if (app.get_subcommands().empty()) {
      out << app.help();
      return kExitUsage;
    }
  } catch (const air::Error& e) {
    // -o json: the error envelope on stdout, where a script reads (the text still goes to stderr).
    if (ctx.global.output == "json") out << error_envelope_text(e) << "\n";
    render_error(err, e);
    return e.exit_code();
  } catch (const std::exception& e) {
    err << "air: error: " << e.what() << "\n";
    return kExitFailed;
  }
  return ctx.exit_code;
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return run_cli(args, std::cout, std::cerr);
}

}  // namespace air::cli
