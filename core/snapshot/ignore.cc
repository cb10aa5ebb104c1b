// Parsing of .gitignore/.airignore lines and the per-directory stack that decides each path, following
// git's precedence: deeper files override shallower ones, the last matching line of a file wins.
#include "core/snapshot/ignore.h"

namespace air {
namespace {

// git trims trailing spaces unless the last one is escaped with a backslash; tabs are kept.
void trim_trailing_spaces(std::string& s) {
  size_t last_space = std::string::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ') {
      if (last_space == std::string::npos) last_space = i;
    } else if (s[i] == '\\') {
      if (++i == s.size()) return;
      last_space = std::string::npos;
    } else {
      last_space = std::string::npos;
    }
  }
  if (last_space != std::string::npos) s.resize(last_space);
}

}  // namespace

std::vector<IgnoreRule> parse_ignore_rules(std::string_view text, const std::string& source_prefix) {
  std::vector<IgnoreRule> rules;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string line(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (line.back() == '\r') line.pop_back();
    trim_trailing_spaces(line);
    if (line.empty()) continue;

    IgnoreRule rule;
    rule.source = source_prefix + ":" + std::to_string(line_no);
    rule.pattern = line;
    std::string_view glob = line;
    if (glob[0] == '!') {
      rule.negated = true;
      glob.remove_prefix(1);
    }
    if (!glob.empty() && glob.back() == '/') {
      rule.dir_only = true;
      glob.remove_suffix(1);
    }
    rule.basename_only = glob.find('/') == std::string_view::npos;
    if (!glob.empty() && glob[0] == '/') glob.remove_prefix(1);
    if (glob.empty()) continue;  // "/" or "!" alone matches nothing in git either
    rule.glob = std::string(glob);
    rules.push_back(std::move(rule));
  }
  return rules;
}

IgnoreStack::IgnoreStack() {
  IgnoreRule git_dir;
  git_dir.source = "built-in";
  git_dir.pattern = ".git/";
  git_dir.glob = ".git";
  git_dir.basename_only = true;
  rules_.push_back(std::move(git_dir));
}

void IgnoreStack::push(const std::string& dir, std::vector<IgnoreRule> git_rules,
                       std::vector<IgnoreRule> air_rules) {
  auto add = [&](std::vector<IgnoreRule>& from, std::vector<Frame>& frames, bool air) {
    if (from.empty()) return;
    Frame frame{dir, air, {}};
    for (auto& r : from) {
      frame.rule_ids.push_back(static_cast<int>(rules_.size()));
      rules_.push_back(std::move(r));
    }
    frames.push_back(std::move(frame));
  };
  add(git_rules, git_frames_, false);
  add(air_rules, air_frames_, true);
}

void IgnoreStack::pop(const std::string& dir) {
  if (!git_frames_.empty() && git_frames_.back().dir == dir) git_frames_.pop_back();
  if (!air_frames_.empty() && air_frames_.back().dir == dir) air_frames_.pop_back();
}

bool IgnoreStack::matches(const IgnoreRule& rule, const std::string& dir, std::string_view path,
                          std::string_view name, bool is_dir) const {
  if (rule.dir_only && !is_dir) return false;
  if (rule.basename_only) return ignore_glob_match(rule.glob, name);
  if (path.size() < dir.size() || path.substr(0, dir.size()) != dir) return false;
  return ignore_glob_match(rule.glob, path.substr(dir.size()));
}

IgnoreStack::Decision IgnoreStack::decide(std::string_view path, bool is_dir) const {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // git never looks inside, nor lists, anything named .git (directory or gitlink file).
  if (name == ".git") return {true, builtin_git_rule()};
  for (const auto* frames : {&air_frames_, &git_frames_}) {
    for (auto f = frames->rbegin(); f != frames->rend(); ++f) {
      for (auto id = f->rule_ids.rbegin(); id != f->rule_ids.rend(); ++id) {
        const IgnoreRule& rule = rules_[*id];
        if (matches(rule, f->dir, path, name, is_dir)) return {!rule.negated, *id};
      }
    }
  }
  return {};
}

}  // namespace air
