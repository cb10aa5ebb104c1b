// jinja2's lexer rules, one state at a time: text up to the next {{ / {% / {#, whitespace control at
// each edge, and the expression tokens inside a tag (a tag ends only where its brackets balance).
#include "trainer/jinja/lexer.h"

#include <cstring>

#include "trainer/jinja/runtime.h"

namespace air::jinja {
namespace {

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name) : name_(name) {
    // Newlines become \n (\r\n and \r too), and one trailing newline goes (keep_trailing_newline off).
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        emit_data(std::string_view(src_).substr(pos_), pos_);
        pos_ = src_.size();
        break;
      }
      std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
      char kind = src_[tag + 1];  // '{', '%' or '#'
      char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      if (sign == '-') {
        size_t end = text.size();
        while (size_t n = py_space_before(text, end)) end -= n;
        text = text.substr(0, end);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: spaces alone between the line's start and a block or comment tag go.
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string_view::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size()) {
          size_t i = l_pos;
          while (i < text.size()) {
            size_t n = py_space_at(text, i);
            if (!n) break;
            i += n;
          }
          if (i == text.size()) text = text.substr(0, l_pos);
        }
      }
      size_t text_start = pos_;
      emit_data(text, text_start);
      pos_ = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        line_starting = lex_comment(tag);
      } else if (kind == '%' && try_raw(tag, sign)) {
        line_starting = false;
      } else {
        line_starting = lex_tag(kind, tag);
      }
    }
    Token eof{Token::Type::kEof, "", 0, 0};
    locate(src_.size(), &eof.line, &eof.column);
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void locate(size_t at, int* line, int* column) {
    // Positions are asked for in increasing order: advance a cursor.
    if (at < cursor_) { cursor_ = 0; cursor_line_ = 1; cursor_col_ = 1; }
    for (; cursor_ < at && cursor_ < src_.size(); ++cursor_) {
      if (src_[cursor_] == '\n') { ++cursor_line_; cursor_col_ = 1; }
      else if ((static_cast<unsigned char>(src_[cursor_]) & 0xc0) != 0x80) ++cursor_col_;
    }
    *line = cursor_line_;
    *column = cursor_col_;
  }

  [[noreturn]] void error(size_t at, const std::string& what) {
    int line, column;
    locate(at, &line, &column);
    fail(Error::Kind::kSyntax, name_, line, column, what);
  }

  void emit_data(std::string_view text, size_t at) {
    if (text.empty()) return;
    Token t{Token::Type::kData, std::string(text), 0, 0};
    locate(at, &t.line, &t.column);
    tokens_.push_back(std::move(t));
  }

  void push(Token::Type type, std::string text, size_t at) {
    Token t{type, std::move(text), 0, 0};
    locate(at, &t.line, &t.column);
    tokens_.push_back(std::move(t));
  }

  // After the tag's end: trim_blocks eats one newline after %} and #}; `-` eats all whitespace.
  size_t skip_all_space(size_t p) const {
    while (p < src_.size()) {
      size_t n = py_space_at(src_, p);
      if (!n) break;
      p += n;
    }
    return p;
  }

  bool lex_comment(size_t tag) {
    for (size_t i = pos_; i + 1 < src_.size(); ++i) {
      if (src_[i] != '#' || src_[i + 1] != '}') continue;
      size_t end = i + 2;
      bool minus = i > pos_ && src_[i - 1] == '-';
      bool plus = i > pos_ && src_[i - 1] == '+';
      if (minus) end = skip_all_space(end);
      else if (!plus && end < src_.size() && src_[end] == '\n') ++end;
      pos_ = end;
      return end > 0 && src_[end - 1] == '\n';
    }
    error(tag, "Missing end of comment tag");
  }

  // {% raw %} ... {% endraw %}: the text between is data, untouched.
  bool try_raw(size_t tag, char sign) {
    size_t p = pos_;
    while (p < src_.size() && py_space_at(src_, p)) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    size_t q = p;
    while (q < src_.size() && py_space_at(src_, q)) ++q;
    bool minus = false;
    if (q < src_.size() && src_[q] == '-') { minus = true; ++q; }
    if (src_.compare(q, 2, "%}") != 0) return false;
    size_t body = q + 2;
    if (minus) body = skip_all_space(body);
    // Find {%(-|+)? \s* endraw \s* (+%}|-%}\s*|%}\n?)
    for (size_t i = src_.find("{%", body); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t r = i + 2;
      char esign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r] : 0;
      if (esign) ++r;
      while (r < src_.size() && py_space_at(src_, r)) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && py_space_at(src_, r)) ++r;
      size_t end;
      if (src_.compare(r, 3, "+%}") == 0) end = r + 3;
      else if (src_.compare(r, 3, "-%}") == 0) end = skip_all_space(r + 3);
      else if (src_.compare(r, 2, "%}") == 0) end = r + 2 + (r + 2 < src_.size() && src_[r + 2] == '\n');
      else continue;
      std::string_view text = std::string_view(src_).substr(body, i - body);
      if (esign == '-') {
        size_t e = text.size();
        while (size_t n = py_space_before(text, e)) e -= n;
        text = text.substr(0, e);
      } else if (esign != '+') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string_view::npos ? 0 : l_pos + 1;
        size_t k = l_pos;
        while (k < text.size() && py_space_at(text, k)) k += py_space_at(text, k);
        bool line_starting = body > 0 && src_[body - 1] == '\n';
        if ((l_pos > 0 || line_starting) && l_pos < text.size() && k == text.size()) text = text.substr(0, l_pos);
      }
      emit_data(text, body);
      pos_ = end;
      return true;
    }
    (void)sign;
    error(tag, "Missing end of raw directive");
  }

  // The tokens of {{ ... }} or {% ... %}; returns whether the match ended with a newline.
  bool lex_tag(char kind, size_t tag) {
    push(kind == '{' ? Token::Type::kVarBegin : Token::Type::kBlockBegin, "", tag);
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) error(tag, kind == '{' ? "unexpected end of template, expected 'end of print statement'" : "unexpected end of template, expected 'end of statement block'");
      if (balance.empty()) {
        if (kind == '{') {
          if (src_.compare(pos_, 3, "-}}") == 0) {
            push(Token::Type::kVarEnd, "", pos_);
            pos_ = skip_all_space(pos_ + 3);
            return src_[pos_ - 1] == '\n';
          }
          if (src_.compare(pos_, 2, "}}") == 0) {
            push(Token::Type::kVarEnd, "", pos_);
            pos_ += 2;
            return false;
          }
        } else {
          if (src_.compare(pos_, 3, "+%}") == 0) {
            push(Token::Type::kBlockEnd, "", pos_);
            pos_ += 3;
            return false;
          }
          if (src_.compare(pos_, 3, "-%}") == 0) {
            push(Token::Type::kBlockEnd, "", pos_);
            pos_ = skip_all_space(pos_ + 3);
            return src_[pos_ - 1] == '\n';
          }
          if (src_.compare(pos_, 2, "%}") == 0) {
            push(Token::Type::kBlockEnd, "", pos_);
            pos_ += 2;
            if (pos_ < src_.size() && src_[pos_] == '\n') {
              ++pos_;
              return true;
            }
            return false;
          }
        }
      }
      if (size_t n = py_space_at(src_, pos_)) {
        pos_ += n;
        continue;
      }
      char c = src_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t start = pos_;
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        push(Token::Type::kName, src_.substr(start, pos_ - start), start);
      } else if (c == '\'' || c == '"') {
        lex_string();
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                           "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};
        const char* op = nullptr;
        for (const char* o : kOps)
          if (src_.compare(pos_, std::strlen(o), o) == 0) { op = o; break; }
        if (!op) error(pos_, std::string("unexpected char '") + c + "'");
        std::string s(op);
        if (s == "{" || s == "(" || s == "[") {
          balance.push_back(s == "{" ? '}' : s == "(" ? ')' : ']');
        } else if (s == "}" || s == ")" || s == "]") {
          if (balance.empty()) error(pos_, "unexpected '" + s + "'");
          if (balance.back() != s[0]) error(pos_, "unexpected '" + s + "', expected '" + balance.back() + "'");
          balance.pop_back();
        }
        push(Token::Type::kOp, s, pos_);
        pos_ += s.size();
      }
    }
  }

  void lex_number() {
    size_t start = pos_;
    auto digits = [&] {
      // (\d+_)*\d+
      size_t p = pos_;
      while (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
        while (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) ++p;
        if (p + 1 < src_.size() && src_[p] == '_' && std::isdigit(static_cast<unsigned char>(src_[p + 1]))) ++p;
        else break;
      }
      return p;
    };
    pos_ = digits();
    bool is_float = false;
    bool after_dot = start > 0 && src_[start - 1] == '.';
    if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      ++pos_;
      pos_ = digits();
      is_float = true;
    }
    if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
        pos_ = p;
        pos_ = digits();
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = start; i < pos_; ++i)
      if (src_[i] != '_') text += src_[i];
    push(is_float ? Token::Type::kFloat : Token::Type::kInt, text, start);
  }

  void lex_string() {
    size_t start = pos_;
    char q = src_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) error(start, "unexpected char '" + std::string(1, q) + "'");
      char c = src_[pos_];
      if (c == q) { ++pos_; break; }
      if (c != '\\') { out += c; ++pos_; continue; }
      // Python's unicode-escape decoding, as jinja2 applies it to string literals.
      if (pos_ + 1 >= src_.size()) error(start, "unexpected char '" + std::string(1, q) + "'");
      char e = src_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': case 'u': case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int k = 0; k < n; ++k, ++pos_) {
            if (pos_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_])))
              error(start, std::string("(unicode error) 'unicodeescape' codec can't decode bytes: truncated \\") + e + " escape");
            char h = src_[pos_];
            cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          append_utf8(cp, out);
          break;
        }
        case 'N': error(start, "\\N{...} escapes in string literals are not supported");
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = e - '0';
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k, ++pos_)
              cp = cp * 8 + (src_[pos_] - '0');
            append_utf8(cp, out);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    push(Token::Type::kString, std::move(out), start);
  }

  const std::string& name_;
  std::string src_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  size_t cursor_ = 0;
  int cursor_line_ = 1, cursor_col_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& name) {
  return Lexer(source, name).run();
}

}  // namespace air::jinja
