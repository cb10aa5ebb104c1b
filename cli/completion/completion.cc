// Completion from the CLI11 command tree: which verb, flag, flag value or positional fits the word under the
// cursor. The shell scripts (cli/completion/scripts.cc) only display what `air __complete` prints.
#include "cli/completion/completion.h"

#include <CLI/CLI.hpp>

#include <cctype>
#include <ostream>

#include "core/wire/api.h"
#include "core/client/client.h"
#include "core/client/config.h"
#include "core/client/local_daemon.h"

namespace air::cli {

namespace {

using Also = Completion::Also;

// What fits as an option's (or positional's) value, read from its type name and validators:
// "{text,json}" (IsMember) and lower-case words of "run|RUN_ID" are literal values; FILE / DIR ask the shell
// for paths; RUN_ID (or JOB_RUN_ID) asks the workspace for run ids. TEXT, INT and the like say nothing.
struct ValueKind {
  std::vector<std::string> words;
  bool runs = false;
  Also also = Also::kNothing;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

ValueKind value_kind(const CLI::Option& o) {
  ValueKind k;
  for (const auto& part : split(o.get_type_name(), ':')) {
    if (part.size() >= 2 && part.front() == '{' && part.back() == '}') {
      for (const auto& w : split(part.substr(1, part.size() - 2), ',')) k.words.push_back(w);
      continue;
    }
    for (const auto& tok : split(part, '|')) {
      if (tok == "FILE") k.also = Also::kFiles;
      else if (tok == "DIR") k.also = Also::kDirs;
      else if (tok == "RUN_ID" || tok == "JOB_RUN_ID") k.runs = true;  // JOB_RUN_ID: the reference CLI's name
      else if (!tok.empty() && std::islower(static_cast<unsigned char>(tok[0]))) k.words.push_back(tok);
    }
  }
  return k;
}

bool takes_value(const CLI::Option& o) { return o.get_type_size() != 0; }
bool visible(const CLI::Option& o) { return !o.get_group().empty(); }

// The option named `w` (-o, --output) on `app` or the commands above it (global flags work after the verb).
const CLI::Option* find_option(const CLI::App* app, const std::string& w) {
  for (; app != nullptr; app = app->get_parent())
    for (const auto* o : app->get_options()) {
      if (o->get_positional() && !o->nonpositional()) continue;
      for (const auto& l : o->get_lnames())
        if (w == "--" + l) return o;
      for (const auto& s : o->get_snames())
        if (w == "-" + s) return o;
    }
  return nullptr;
}

const CLI::App* find_sub(const CLI::App* app, const std::string& w) {
  for (const auto* sub : app->get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == w) return sub;
  return nullptr;
}

// The positional that the npos-th bare word fills (a vector positional takes every word after it).
const CLI::Option* positional_at(const CLI::App* app, size_t npos) {
  std::vector<const CLI::Option*> ps =
      app->get_options([](const CLI::Option* o) { return o->get_positional() && !o->nonpositional(); });
  if (ps.empty()) return nullptr;
  if (npos < ps.size()) return ps[npos];
  return ps.back()->get_items_expected_max() > 1 ? ps.back() : nullptr;
}

struct Adder {
  const std::string& prefix;
  Completion& out;
  void operator()(const std::string& w) const {
    if (w.compare(0, prefix.size(), prefix) != 0) return;
    for (const auto& have : out.words)
      if (have == w) return;
    out.words.push_back(w);
  }
};

void add_values(const CLI::Option& o, const std::function<std::vector<std::string>()>& run_ids, const Adder& add,
                const std::string& before = {}) {
  ValueKind k = value_kind(o);
  for (const auto& w : k.words) add(before + w);
  if (k.runs)
    for (const auto& id : run_ids()) add(before + id);
  if (k.also != Also::kNothing) add.out.also = k.also;
}

void add_flags(const CLI::App* app, const Adder& add) {
  for (; app != nullptr; app = app->get_parent())
    for (const auto* o : app->get_options()) {
      if (!o->nonpositional() || !visible(*o)) continue;
      for (const auto& l : o->get_lnames()) add("--" + l);
      for (const auto& s : o->get_snames()) add("-" + s);
    }
}

// Run ids of a workspace that already runs (TAB must never start a daemon), newest first; none on any error.
std::vector<std::string> workspace_run_ids(const Context& ctx) {
  std::vector<std::string> ids;
  try {
    std::string url, token, ca;
    if (auto t = configured_workspace(ctx.global.profile)) {
      url = t->url, token = t->token, ca = t->ca_file;
    } else if (auto d = read_daemon_info(air_home()); d && daemon_healthy(*d)) {
      url = d->url, token = d->token;
    } else {
      return ids;
    }
    Client c(url, token, ca);
    auto list = c.get_json(std::string(api::kPrefix) + "/runs?all_status=1", 2000).get<api::RunList>();
    for (const auto& r : list.runs) ids.push_back(r.run_id);
  } catch (const std::exception&) {
    ids.clear();
  }
  return ids;
}

}  // namespace

Completion complete_words(const CLI::App& root, const std::vector<std::string>& words,
                          const std::function<std::vector<std::string>()>& run_ids) {
  Completion out;
  const std::string cur = words.empty() ? std::string() : words.back();
  Adder add{cur, out};
  const CLI::App* app = &root;
  const CLI::Option* pending = nullptr;  // an option whose value comes next
  size_t npos = 0;                       // bare words so far on this command
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& w = words[i];
    if (pending != nullptr) {
      pending = nullptr;
    } else if (w.size() > 1 && w[0] == '-') {
      const CLI::Option* o = w.find('=') == std::string::npos ? find_option(app, w) : nullptr;
      if (o != nullptr && takes_value(*o)) pending = o;
    } else if (const CLI::App* sub = find_sub(app, w)) {
      app = sub;
      npos = 0;
    } else {
      ++npos;
    }
  }
  if (pending != nullptr) {
    add_values(*pending, run_ids, add);
  } else if (!cur.empty() && cur[0] == '-') {
    auto eq = cur.find('=');
    const CLI::Option* o = eq == std::string::npos ? nullptr : find_option(app, cur.substr(0, eq));
    if (o != nullptr) add_values(*o, run_ids, add, cur.substr(0, eq + 1));
    else add_flags(app, add);
  } else {
    for (const auto* sub : app->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
      add(sub->get_name());
    if (const CLI::Option* p = positional_at(app, npos)) add_values(*p, run_ids, add);
  }
  return out;
}

int run_complete(const CLI::App& root, const std::vector<std::string>& words, const Context& ctx) {
  std::vector<std::string> w = words;
  if (w.empty()) w.emplace_back();
  Completion c = complete_words(root, w, [&ctx] { return workspace_run_ids(ctx); });
  for (const auto& x : c.words) *ctx.out << x << "\n";
  if (c.also == Also::kFiles) *ctx.out << ":files\n";
  if (c.also == Also::kDirs) *ctx.out << ":dirs\n";
  return kExitOk;
}

void setup_completion(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("completion", "Print a shell completion script: air completion bash|zsh|fish");
  auto shell = std::make_shared<std::string>();
  cmd->add_option("shell", *shell, "The shell")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  cmd->callback([&ctx, shell] { *ctx.out << completion_script(*shell); });
}

}  // namespace air::cli
