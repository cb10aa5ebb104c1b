// A small recursive-descent reader for the requirement grammar; it only checks, it builds nothing.
#include "core/workload/requirement.h"

#include <array>
#include <cctype>

#include <fmt/format.h>

namespace air {

namespace {

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  std::optional<RequirementProblem> run() {
    skip_ws();
    if (eof()) return problem(0, "empty requirement", "write a package name such as 'numpy>=1.26'");
    if (peek() == '-') return option();
    if (looks_like_path_or_url()) return path_or_url();
    return pep508();
  }

 private:
  bool eof() const { return i_ >= s_.size(); }
  char peek(size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  void skip_ws() {
    while (!eof() && (peek() == ' ' || peek() == '\t')) ++i_;
  }
  bool starts(std::string_view p) const { return s_.substr(i_).substr(0, p.size()) == p; }

  RequirementProblem problem(size_t at, std::string message, std::string hint = {}, size_t len = 1) {
    return {std::move(message), std::move(hint), at, len};
  }

  bool looks_like_path_or_url() const {
    if (starts("./") || starts("../") || starts("/") || starts("~/")) return true;
    size_t j = i_;
    while (j < s_.size() && (alnum(s_[j]) || s_[j] == '+' || s_[j] == '-' || s_[j] == '.')) ++j;
    return j > i_ && s_.substr(j).substr(0, 3) == "://";
  }

  std::optional<RequirementProblem> path_or_url() {
    size_t start = i_;
    while (!eof() && peek() != ' ' && peek() != '\t') ++i_;
    skip_ws();
    if (!eof() && peek() != ';')
      return problem(i_, "unexpected text after the path or URL", "a path or URL requirement is one word");
    if (!eof()) {
      ++i_;
      return marker_rest();
    }
    (void)start;
    return std::nullopt;
  }

  std::optional<RequirementProblem> option() {
    static const std::array<std::string_view, 11> with_arg = {
        "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i",
        "--index-url", "--extra-index-url", "-f", "--find-links"};
    size_t start = i_;
    while (!eof() && peek() != ' ' && peek() != '=' && peek() != '\t') ++i_;
    std::string_view name = s_.substr(start, i_ - start);
    if (name == "--pre") {
      skip_ws();
      if (!eof()) return problem(i_, "'--pre' takes no argument");
      return std::nullopt;
    }
    bool known = false;
    for (auto w : with_arg) known = known || w == name;
    if (!known) {
      return problem(start, fmt::format("unsupported pip option '{}'", name),
                     "allowed options: -r/--requirement FILE, -c/--constraint FILE, -e/--editable PATH, "
                     "-i/--index-url URL, --extra-index-url URL, -f/--find-links URL, --pre",
                     name.size());
    }
    if (!eof() && peek() == '=') ++i_;
    skip_ws();
    if (eof()) return problem(start, fmt::format("'{}' needs an argument", name), "", name.size());
    while (!eof() && peek() != ' ' && peek() != '\t') ++i_;
    skip_ws();
    if (!eof()) return problem(i_, fmt::format("unexpected text after the argument of '{}'", name));
    return std::nullopt;
  }

  bool name_token() {
    if (eof() || !alnum(peek())) return false;
    while (!eof() && (alnum(peek()) || peek() == '.' || peek() == '_' || peek() == '-')) ++i_;
    return alnum(s_[i_ - 1]);
  }

  std::optional<RequirementProblem> pep508() {
    size_t start = i_;
    if (!name_token()) {
      return problem(start, "expected a package name (letters, digits, '.', '_', '-')",
                     "write it as 'name', 'name>=1.0', 'name[extra]' or 'name @ https://...'");
    }
    skip_ws();
    if (peek() == '[') {
      if (auto p = extras()) return p;
      skip_ws();
    }
    if (peek() == '@') {
      ++i_;
      skip_ws();
      size_t url = i_;
      while (!eof() && peek() != ' ' && peek() != '\t') ++i_;
      std::string_view u = s_.substr(url, i_ - url);
      if (u.empty()) return problem(url, "expected a URL after '@'", "for example 'pkg @ https://host/pkg.whl'");
      if (u.find("://") == std::string_view::npos && u.substr(0, 5) != "file:")
        return problem(url, "expected a URL after '@' (scheme://...)", "", u.size());
      skip_ws();
      if (eof()) return std::nullopt;
      if (peek() != ';') return problem(i_, "unexpected text after the URL");
      ++i_;
      return marker_rest();
    }
    bool paren = false;
    if (peek() == '(') {
      paren = true;
      ++i_;
      skip_ws();
    }
    if (is_op_start()) {
      if (auto p = specifiers()) return p;
    }
    if (paren) {
      skip_ws();
      if (peek() != ')') return problem(i_, "expected ')' to close the version specifiers");
      ++i_;
    }
    skip_ws();
    if (eof()) return std::nullopt;
    if (peek() == ';') {
      ++i_;
      return marker_rest();
    }
    if (std::isdigit(static_cast<unsigned char>(peek())))
      return problem(i_, "expected a version operator before the version",
                     fmt::format("write '{}=={}' to pin it", s_.substr(start, s_.find_first_of(" \t", start) - start),
                                 s_.substr(i_)));
    return problem(i_, fmt::format("unexpected '{}' after the package name", peek()),
                   "valid forms: 'name>=1.0', 'name[extra]', 'name; python_version>=\"3.10\"', 'name @ URL'");
  }

  std::optional<RequirementProblem> extras() {
    ++i_;  // [
    skip_ws();
    if (peek() == ']') {
      ++i_;
      return std::nullopt;
    }
    while (true) {
      skip_ws();
      size_t at = i_;
      if (!name_token()) return problem(at, "expected an extra's name inside '[...]'");
      skip_ws();
      if (peek() == ',') { ++i_; continue; }
      if (peek() == ']') { ++i_; return std::nullopt; }
      return problem(i_, "expected ',' or ']' in the extras list");
    }
  }

  bool is_op_start() const { return peek() == '<' || peek() == '>' || peek() == '=' || peek() == '!' || peek() == '~'; }

  std::optional<RequirementProblem> specifiers() {
    while (true) {
      skip_ws();
      size_t at = i_;
      std::string_view op;
      for (auto o : {"===", "~=", "==", "!=", "<=", ">=", "<", ">"}) {
        if (starts(o)) {
          op = o;
          break;
        }
      }
      if (op.empty()) {
        if (peek() == '=') return problem(at, "'=' is not a version operator", "use '==' to pin a version");
        return problem(at, "expected a version operator (==, !=, <, <=, >, >=, ~=, ===)");
      }
      i_ += op.size();
      skip_ws();
      size_t v = i_;
      while (!eof() && (alnum(peek()) || peek() == '.' || peek() == '*' || peek() == '+' || peek() == '!' ||
                        peek() == '_' || peek() == '-'))
        ++i_;
      std::string_view version = s_.substr(v, i_ - v);
      if (version.empty()) return problem(v, fmt::format("expected a version after '{}'", op));
      size_t star = version.find('*');
      if (star != std::string_view::npos) {
        bool ok = (op == "==" || op == "!=") && star == version.size() - 1 && version.size() >= 2 &&
                  version[star - 1] == '.';
        if (!ok) return problem(v + star, "'*' is only allowed as a trailing '.*' with '==' or '!='");
      }
      skip_ws();
      if (peek() != ',') return std::nullopt;
      ++i_;
    }
  }

  // After ';': an environment marker expression, then the end.
  std::optional<RequirementProblem> marker_rest() {
    skip_ws();
    if (eof()) return problem(i_, "expected an environment marker after ';'",
                              "for example 'python_version >= \"3.10\"'");
    if (auto p = marker_or()) return p;
    skip_ws();
    if (!eof()) return problem(i_, "unexpected text in the environment marker", "join conditions with 'and' / 'or'");
    return std::nullopt;
  }

  bool keyword(std::string_view w) {
    skip_ws();
    if (!starts(w)) return false;
    char after = peek(w.size());
    if (alnum(after) || after == '_') return false;
    i_ += w.size();
    return true;
  }

  std::optional<RequirementProblem> marker_or() {
    if (auto p = marker_and()) return p;
    while (keyword("or")) {
      if (auto p = marker_and()) return p;
    }
    return std::nullopt;
  }

  std::optional<RequirementProblem> marker_and() {
    if (auto p = marker_expr()) return p;
    while (keyword("and")) {
      if (auto p = marker_expr()) return p;
    }
    return std::nullopt;
  }

  std::optional<RequirementProblem> marker_expr() {
    skip_ws();
    if (peek() == '(') {
      ++i_;
      if (auto p = marker_or()) return p;
      skip_ws();
      if (peek() != ')') return problem(i_, "expected ')' in the environment marker");
      ++i_;
      return std::nullopt;
    }
    if (auto p = marker_value()) return p;
    skip_ws();
    size_t at = i_;
    bool op = false;
    for (auto o : {"===", "~=", "==", "!=", "<=", ">=", "<", ">"}) {
      if (starts(o)) {
        i_ += std::string_view(o).size();
        op = true;
        break;
      }
    }
    if (!op && !keyword("in")) {
      if (keyword("not")) op = keyword("in");
      if (!op) return problem(at, "expected a comparison (==, !=, <, <=, >, >=, ~=, in, not in) in the marker");
    }
    return marker_value();
  }

  std::optional<RequirementProblem> marker_value() {
    static const std::array<std::string_view, 12> vars = {
        "python_version", "python_full_version", "os_name", "sys_platform", "platform_release",
        "platform_system", "platform_version", "platform_machine", "platform_python_implementation",
        "implementation_name", "implementation_version", "extra"};
    skip_ws();
    size_t at = i_;
    if (peek() == '"' || peek() == '\'') {
      char q = peek();
      ++i_;
      while (!eof() && peek() != q) ++i_;
      if (eof()) return problem(at, "unterminated string in the environment marker");
      ++i_;
      return std::nullopt;
    }
    while (!eof() && (alnum(peek()) || peek() == '_' || peek() == '.')) ++i_;
    std::string_view w = s_.substr(at, i_ - at);
    for (auto v : vars) {
      if (v == w) return std::nullopt;
    }
    if (w.empty()) return problem(at, "expected a marker variable or a quoted string");
    return problem(at, fmt::format("unknown marker variable '{}'", w),
                   "use python_version, sys_platform, platform_machine, ... or quote a literal value", w.size());
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

std::optional<RequirementProblem> check_requirement(std::string_view req) { return Reader(req).run(); }

}  // namespace air
