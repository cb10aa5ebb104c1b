// Ignore rules: the glob matcher, line parsing, and the whole walk compared with git itself on
// generated trees (git ls-files -o --exclude-standard for the set, git check-ignore -v for attribution).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "core/snapshot/ignore.h"
#include "core/snapshot/snapshot.h"
#include "tests/core/snapshot/test_util.h"

using air::ignore_glob_match;
using air::parse_ignore_rules;
using namespace air::test;

TEST_CASE("glob: stars, question marks and slashes", "[ignore]") {
  CHECK(ignore_glob_match("*.log", "a.log"));
  CHECK_FALSE(ignore_glob_match("*.log", "dir/a.log"));
  CHECK(ignore_glob_match("a?c", "abc"));
  CHECK_FALSE(ignore_glob_match("a?c", "a/c"));
  CHECK(ignore_glob_match("a/*/c", "a/b/c"));
  CHECK_FALSE(ignore_glob_match("a/*/c", "a/b/x/c"));
  CHECK(ignore_glob_match("*", ""));
  CHECK_FALSE(ignore_glob_match("a*b", "a"));
  CHECK(ignore_glob_match("a*b*c", "axxbyyc"));
  CHECK_FALSE(ignore_glob_match("abc", "abcd"));
}

TEST_CASE("glob: double star forms", "[ignore]") {
  CHECK(ignore_glob_match("**/foo", "foo"));
  CHECK(ignore_glob_match("**/foo", "a/b/foo"));
  CHECK_FALSE(ignore_glob_match("**/foo", "a/xfoo"));
  CHECK(ignore_glob_match("abc/**", "abc/x"));
  CHECK(ignore_glob_match("abc/**", "abc/x/y"));
  CHECK_FALSE(ignore_glob_match("abc/**", "abc"));
  CHECK(ignore_glob_match("a/**/b", "a/b"));
  CHECK(ignore_glob_match("a/**/b", "a/x/b"));
  CHECK(ignore_glob_match("a/**/b", "a/x/y/b"));
  CHECK_FALSE(ignore_glob_match("a/**/b", "a/x/yb"));
  // Not a whole component: behaves like a single star.
  CHECK(ignore_glob_match("a**b", "axxb"));
  CHECK_FALSE(ignore_glob_match("a**b", "ax/xb"));
  CHECK_FALSE(ignore_glob_match("**foo", "a/foo"));
}

TEST_CASE("glob: bracket expressions and escapes", "[ignore]") {
  CHECK(ignore_glob_match("[abc]", "b"));
  CHECK_FALSE(ignore_glob_match("[abc]", "d"));
  CHECK(ignore_glob_match("[!abc]", "d"));
  CHECK(ignore_glob_match("[^abc]", "d"));
  CHECK(ignore_glob_match("[a-c]x", "bx"));
  CHECK_FALSE(ignore_glob_match("[a-c]x", "dx"));
  CHECK(ignore_glob_match("[]]", "]"));
  CHECK(ignore_glob_match("[!]]", "a"));
  CHECK(ignore_glob_match("[[:digit:]]", "7"));
  CHECK_FALSE(ignore_glob_match("[[:digit:]]", "x"));
  CHECK(ignore_glob_match("[[:upper:][:digit:]]", "Q"));
  CHECK_FALSE(ignore_glob_match("[[:bogus:]]", "b"));
  CHECK_FALSE(ignore_glob_match("a[/]b", "a/b"));
  CHECK_FALSE(ignore_glob_match("[abc", "a"));
  CHECK(ignore_glob_match("\\*", "*"));
  CHECK_FALSE(ignore_glob_match("\\*", "x"));
  CHECK(ignore_glob_match("\\#x", "#x"));
  CHECK(ignore_glob_match("[\\]]", "]"));
}

TEST_CASE("parse: comments, escapes, trailing spaces, negation, anchoring", "[ignore]") {
  auto rules = parse_ignore_rules(
      "\xEF\xBB\xBF# comment\n\n\\#hash\n\\!bang\n!keep.log\nbuild/\n/top\na/b\nspaces   \nescaped\\ \n"
      "crlf\r\n/\n",
      "sub/.gitignore");
  REQUIRE(rules.size() == 9);
  CHECK(rules[0].source == "sub/.gitignore:3");
  CHECK(rules[0].glob == "\\#hash");
  CHECK_FALSE(rules[0].negated);
  CHECK(rules[1].glob == "\\!bang");
  CHECK_FALSE(rules[1].negated);
  CHECK(rules[2].negated);
  CHECK(rules[2].glob == "keep.log");
  CHECK(rules[2].pattern == "!keep.log");
  CHECK(rules[3].dir_only);
  CHECK(rules[3].basename_only);
  CHECK(rules[3].glob == "build");
  CHECK(rules[4].glob == "top");
  CHECK_FALSE(rules[4].basename_only);
  CHECK_FALSE(rules[5].basename_only);
  CHECK(rules[6].glob == "spaces");
  CHECK(rules[7].glob == "escaped\\ ");
  CHECK(rules[8].glob == "crlf");
  CHECK(rules[8].source == "sub/.gitignore:11");
}

namespace {

// A generated tree plus ignore files, built from a seed so that a failure can be replayed.
struct GeneratedTree {
  std::vector<std::string> files;  // every file, relative (ignore files included)
};

const char* const kNames[] = {"a",     "b",      "foo",   "bar",  "x.txt", "y.log",  "build",    "node_modules",
                              "dir1",  "Dir2",   "#hash", "!bang", "sp ",  "keep.log", "data.bin", "[x]",
                              "deep",  "z.tmp",  "q1",    "q22"};

const char* const kPatterns[] = {
    "*.log",   "!keep.log", "build/",   "/foo",     "foo",      "a/**/b",  "**/bar",   "deep/**",  "!deep/q1",
    "dir?",    "[a-c]",     "[!a-z]*",  "\\#hash",  "\\!bang",  "sp\\ ",   "sp ",      "x.txt   ", "*.tmp",
    "!*.tmp",  "/dir1/",    "b/",       "**/a/x.txt", "node_modules", "q[0-9]", "q[0-9][0-9]", "a/*",
    "!a/b",    "*/x.txt",   "**",       "!dir1/**", "/*.bin",   "Dir2/**/y.log", "\\[x\\]", "[[]x]",
    "!build/",  "d*/",       "data.*",  "!/foo",    "*~",       "deep/**/z.tmp", "!**/q22", "[[:upper:]]*"};

// A pattern made of a random name with a wildcard, a random anchor and a random ending.
std::string synthesize_pattern(std::mt19937& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::string name = kNames[pick(std::size(kNames))];
  if (name.find_first_of("[#! ") != std::string::npos) name = "x.txt";
  switch (pick(4)) {
    case 0: name[pick(name.size())] = '?'; break;
    case 1: name = name.substr(0, pick(name.size())) + "*"; break;
    case 2: name = "*" + name.substr(pick(name.size())); break;
    default: break;
  }
  const char* prefixes[] = {"", "", "/", "**/", "dir1/", "a/", "*/", "deep/**/"};
  const char* suffixes[] = {"", "", "/", "/**", "/*"};
  std::string p = std::string(prefixes[pick(std::size(prefixes))]) + name + suffixes[pick(std::size(suffixes))];
  return pick(4) == 0 ? "!" + p : p;
}

GeneratedTree generate(const std::string& root, uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  GeneratedTree t;
  std::vector<std::string> dirs{""};
  for (size_t i = 0; i < dirs.size() && dirs.size() < 60; ++i) {
    size_t depth = std::count(dirs[i].begin(), dirs[i].end(), '/');
    size_t children = 4 + pick(8);
    for (size_t c = 0; c < children; ++c) {
      std::string name = kNames[pick(std::size(kNames))];
      std::string path = dirs[i] + name;
      if (std::find(t.files.begin(), t.files.end(), path) != t.files.end()) continue;
      if (std::find(dirs.begin(), dirs.end(), path + "/") != dirs.end()) continue;
      if (depth < 4 && pick(5) < 2) {
        dirs.push_back(path + "/");
      } else {
        write_file(root + "/" + path, "content of " + path + "\n");
        t.files.push_back(path);
      }
    }
  }
  for (const auto& d : dirs) {
    std::filesystem::create_directories(root + "/" + d);
    if (d != "" && pick(3) != 0) continue;
    std::string text;
    size_t lines = 1 + pick(6);
    for (size_t l = 0; l < lines; ++l)
      text += (pick(2) ? std::string(kPatterns[pick(std::size(kPatterns))]) : synthesize_pattern(rng)) + "\n";
    write_file(root + "/" + d + ".gitignore", text);
    t.files.push_back(d + ".gitignore");
  }
  return t;
}

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

const std::string kGit = "GIT_CONFIG_NOSYSTEM=1 HOME=/nonexistent git -c core.excludesFile=/dev/null ";

}  // namespace

TEST_CASE("walk: the included set and rule attribution equal git's on generated trees", "[ignore][git]") {
  // 30 trees in CI; AIR_IGNORE_TEST_TREES=500 for a deeper run after touching the rules.
  const char* trees = std::getenv("AIR_IGNORE_TEST_TREES");
  uint32_t count = trees ? static_cast<uint32_t>(std::strtoul(trees, nullptr, 10)) : 30;
  for (uint32_t seed = 1; seed <= count; ++seed) {
    INFO("seed " << seed);
    TempDir dir;
    GeneratedTree tree = generate(dir.path(), seed);
    run_shell(kGit + "-C " + shell_quote(dir.path()) + " init -q");

    std::vector<std::string> git_included =
        split_nul(run_shell(kGit + "-C " + shell_quote(dir.path()) + " ls-files -o --exclude-standard -z"));
    std::sort(git_included.begin(), git_included.end());

    air::SnapshotManifest m = air::scan_snapshot(dir.path(), {});
    std::vector<std::string> ours;
    for (const auto& f : m.files) ours.push_back(f.path);
    REQUIRE(ours == git_included);
    if (std::getenv("AIR_TEST_VERBOSE")) std::printf("seed %u: %zu files, %zu included, %zu rules hit\n", seed, tree.files.size(), ours.size(), m.excluded.size());

    // Every excluded file is attributed to the rule git names for it.
    std::set<std::string> included(ours.begin(), ours.end());
    std::string excluded_input;
    for (const auto& f : tree.files)
      if (!included.count(f)) excluded_input += f + '\0';
    std::map<std::string, uint64_t> git_counts;
    if (!excluded_input.empty()) {
      write_file(dir / ".git/excluded-list", excluded_input);
      auto fields = split_nul(run_shell(kGit + "-C " + shell_quote(dir.path()) +
                                        " check-ignore -v -z --no-index --stdin < " +
                                        shell_quote(dir / ".git/excluded-list")));
      REQUIRE(fields.size() % 4 == 0);
      for (size_t i = 0; i < fields.size(); i += 4) git_counts[fields[i] + ":" + fields[i + 1]]++;
    }
    std::map<std::string, uint64_t> our_counts;
    uint64_t git_dir_files = 0;
    for (const auto& c : m.excluded) {
      if (c.source == "built-in") {
        git_dir_files = c.files_excluded;
      } else {
        our_counts[c.source] = c.files_excluded;
      }
    }
    CHECK(our_counts == git_counts);
    CHECK(git_dir_files > 0);
    CHECK(m.files_excluded == tree.files.size() - ours.size() + git_dir_files);
  }
}
