// The template's tokens, cut as jinja2's lexer cuts them with transformers' settings: trim_blocks and
// lstrip_blocks on, keep_trailing_newline off, newlines normalised to \n, `-` / `+` whitespace control.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace air::jinja {

struct Token {
  enum class Type {
    kData, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOp, kEof,
  };
  Type type;
  std::string text;  // data, name, the string's decoded value, the number's digits, the operator
  int line = 1, column = 1;
  bool is_op(std::string_view op) const { return type == Type::kOp && text == op; }
  bool is_name(std::string_view n) const { return type == Type::kName && text == n; }
};

// Throws Error (kSyntax) at the offending position.
std::vector<Token> tokenize(std::string_view source, const std::string& name);

}  // namespace air::jinja
