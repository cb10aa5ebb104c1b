// Ignore rules with git's own semantics (nested .gitignore files, negation, anchoring, `**`, classes),
// plus .airignore files with the same syntax that take precedence over every .gitignore rule.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace air {

// git's wildmatch with WM_PATHNAME: `*`, `?` and `[...]` never match '/', `**` between slashes (or at
// either end) matches across directories, backslash escapes the next character.
bool ignore_glob_match(std::string_view pattern, std::string_view text);

struct IgnoreRule {
  std::string source;    // ".gitignore:3", "sub/.gitignore:1", ".airignore:2", "built-in"
  std::string pattern;   // the line as written (trailing spaces trimmed as git does)
  std::string glob;      // what is matched: no '!', no leading or trailing '/'
  bool negated = false;  // "!pattern": re-includes
  bool dir_only = false;  // "pattern/": matches directories only
  bool basename_only = false;  // no '/' inside: matches the name at any depth below the file's folder
};

// Parses one ignore file's text. `source_prefix` is e.g. "sub/.gitignore" and names each rule with its
// 1-based line. Blank lines and comments yield no rule.
std::vector<IgnoreRule> parse_ignore_rules(std::string_view text, const std::string& source_prefix);

// The rules in force while walking a tree: one frame per directory level that has ignore files.
// Rule ids are stable for the stack's lifetime (they index rules()), so callers can count per rule.
class IgnoreStack {
 public:
  IgnoreStack();

  // Adds the rules of the directory `dir` ("" for the root, else "a/b/", with the trailing slash).
  // Must be called in walk order: the frame for a directory after its parent's.
  void push(const std::string& dir, std::vector<IgnoreRule> git_rules, std::vector<IgnoreRule> air_rules);
  // Drops the frames of `dir` (if it pushed any) when the walk leaves it.
  void pop(const std::string& dir);

  struct Decision {
    bool excluded = false;
    int rule = -1;  // the deciding rule (an index into rules()), -1 when no rule matched
  };
  // Decides one path (relative to the root, no trailing slash). .airignore rules win over .gitignore
  // rules; deeper files win over shallower ones; within one file the last matching line wins.
  Decision decide(std::string_view path, bool is_dir) const;

  const std::vector<IgnoreRule>& rules() const { return rules_; }
  int builtin_git_rule() const { return 0; }

 private:
  struct Frame {
    std::string dir;
    bool air = false;
    std::vector<int> rule_ids;
  };
  bool matches(const IgnoreRule& rule, const std::string& dir, std::string_view path,
               std::string_view name, bool is_dir) const;

  std::vector<IgnoreRule> rules_;
  std::vector<Frame> git_frames_;
  std::vector<Frame> air_frames_;
};

}  // namespace air
