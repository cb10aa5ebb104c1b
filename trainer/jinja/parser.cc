// jinja2's grammar over the lexer's tokens: statements ({% for %}, {% if %}, {% set %}, {% macro %},
// {% call %}, {% filter %}, {% generation %}, loop controls) and expressions with jinja2's precedence
// (filters and tests bind tighter than arithmetic; `not` looser than comparisons).
#include <map>
#include <sstream>

#include "trainer/jinja/builtins.h"
#include "trainer/jinja/lexer.h"
#include "trainer/jinja/runtime.h"

namespace air::jinja {

void fail(Error::Kind kind, const std::string& name, int line, int column, const std::string& what) {
  std::ostringstream m;
  m << name << ":" << line << ":" << column << ": ";
  switch (kind) {
    case Error::Kind::kSyntax: m << "syntax error: "; break;
    case Error::Kind::kUnsupported: m << "unsupported: "; break;  // the message ends with the note below
    case Error::Kind::kRaised: m << "raised: "; break;
    case Error::Kind::kRuntime: m << "error: "; break;
  }
  m << what;
  if (kind == Error::Kind::kUnsupported) m << " (valid Jinja that air's template engine does not implement)";
  throw Error(kind, m.str(), line, column);
}

namespace {

using T = Token::Type;

class Parser {
 public:
  Parser(std::vector<Token> tokens, Program& program) : toks_(std::move(tokens)), prog_(program) {}

  void parse() { prog_.body = subparse({}); }

 private:
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  const Token& next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }

  [[noreturn]] void error(const Token& at, const std::string& what, Error::Kind kind = Error::Kind::kSyntax) {
    fail(kind, prog_.name, at.line, at.column, what);
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case T::kEof: return "end of template";
      case T::kVarEnd: return "end of print statement";
      case T::kBlockEnd: return "end of statement block";
      case T::kVarBegin: return "begin of print statement";
      case T::kBlockBegin: return "begin of statement block";
      case T::kString: return "string";
      case T::kInt: return "integer";
      case T::kFloat: return "float";
      case T::kData: return "template data";
      default: return "'" + t.text + "'";
    }
  }

  void expect_op(std::string_view op) {
    if (!cur().is_op(op)) error(cur(), "expected token '" + std::string(op) + "', got " + describe(cur()));
    next();
  }
  void expect_name(std::string_view n) {
    if (!cur().is_name(n)) error(cur(), "expected token '" + std::string(n) + "', got " + describe(cur()));
    next();
  }
  void expect_block_end() {
    if (cur().type != T::kBlockEnd) error(cur(), "expected token 'end of statement block', got " + describe(cur()));
    next();
  }
  std::string expect_identifier() {
    if (cur().type != T::kName) error(cur(), "expected name, got " + describe(cur()));
    return next().text;
  }

  int slot(const std::string& name) {
    auto it = slots_.find(name);
    if (it != slots_.end()) return it->second;
    int id = static_cast<int>(prog_.names.size());
    prog_.names.push_back(name);
    slots_.emplace(name, id);
    return id;
  }

  ExprPtr node(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  StmtPtr stmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  // Statements until a {% name %} whose name is in `ends` (left unconsumed, at the name).
  Body subparse(const std::vector<std::string_view>& ends) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == T::kEof) {
        if (!ends.empty()) {
          std::string list;
          for (auto e : ends) list += (list.empty() ? "'" : " or '") + std::string(e) + "'";
          error(t, "unexpected end of template; jinja was looking for " + list + open_blocks());
        }
        return body;
      }
      if (t.type == T::kData) {
        auto s = stmt(Stmt::Kind::kText, t);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == T::kVarBegin) {
        auto s = stmt(Stmt::Kind::kOutput, t);
        next();
        s->expr = parse_tuple(true);
        if (cur().type != T::kVarEnd) error(cur(), "expected token 'end of print statement', got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.type == T::kBlockBegin) {
        next();
        const Token& name = cur();
        if (name.type != T::kName) error(name, "tag name expected");
        for (auto e : ends)
          if (name.text == e) return body;
        body.push_back(parse_statement());
      } else {
        error(t, "unexpected " + describe(t));
      }
    }
  }

  std::string open_blocks() const {
    if (open_.empty()) return ".";
    return ". The innermost block that needs to be closed is '" + open_.back() + "'.";
  }

  // Parses {% tag ... %} ... up to and including its end tag.
  StmtPtr parse_statement() {
    Depth guard(*this);
    const Token& t = cur();
    const std::string& tag = t.text;
    if (tag == "if") return parse_if();
    if (tag == "for") return parse_for();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "generation") return parse_generation();
    if (tag == "print") {
      auto s = stmt(Stmt::Kind::kOutput, t);
      next();
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) error(t, "'" + tag + "' outside of a loop");  // jinja2: "Unexpected '...'"
      auto s = stmt(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, t);
      next();
      expect_block_end();
      return s;
    }
    static const char* const kUnsupportedTags[] = {"block", "extends", "include", "import", "from", "with",
                                                   "autoescape", "trans", "pluralize", "do", "debug"};
    for (const char* u : kUnsupportedTags) {
      if (tag == u) {
        if (tag == "do" || tag == "trans" || tag == "debug" || tag == "pluralize")
          error(t, "Encountered unknown tag '" + tag + "'.");  // jinja2 without those extensions
        error(t, "the '{% " + tag + " %}' tag", Error::Kind::kUnsupported);
      }
    }
    error(t, "Encountered unknown tag '" + tag + "'." + (open_.empty() ? std::string() : " Jinja was looking for the end of '" + open_.back() + "'."));
  }

  StmtPtr parse_if() {
    auto s = stmt(Stmt::Kind::kIf, cur());
    next();
    open_.push_back("if");
    while (true) {
      s->conditions.push_back(parse_tuple(false));
      expect_block_end();
      s->bodies.push_back(subparse({"elif", "else", "endif"}));
      std::string tag = next().text;
      if (tag == "elif") continue;
      if (tag == "else") {
        expect_block_end();
        s->bodies.push_back(subparse({"endif"}));
        next();
      }
      break;
    }
    expect_block_end();
    open_.pop_back();
    return s;
  }

  void parse_assign_target(Stmt& s, bool with_namespace) {
    const Token& first = cur();
    if (with_namespace && first.type == T::kName && peek().is_op(".")) {
      s.target_names.push_back(next().text);
      s.target_slots.push_back(slot(s.target_names.back()));
      next();
      s.target_attr = expect_identifier();
      return;
    }
    bool paren = cur().is_op("(");
    if (paren) next();
    while (true) {
      std::string n = expect_identifier();
      if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None")
        error(first, "can't assign to '" + n + "'");
      s.target_names.push_back(n);
      s.target_slots.push_back(slot(n));
      if (!cur().is_op(",")) break;
      next();
      if (cur().type != T::kName) break;
    }
    if (paren) expect_op(")");
  }

  StmtPtr parse_for() {
    auto s = stmt(Stmt::Kind::kFor, cur());
    next();
    parse_assign_target(*s, false);
    expect_name("in");
    s->expr = parse_tuple(false, {"recursive"});
    if (cur().is_name("if")) {
      next();
      s->loop_filter = parse_expression(true);
    }
    if (cur().is_name("recursive")) error(cur(), "recursive for loops", Error::Kind::kUnsupported);
    expect_block_end();
    open_.push_back("for");
    ++loop_depth_;
    s->body = subparse({"endfor", "else"});
    --loop_depth_;
    if (next().text == "else") {
      expect_block_end();
      s->else_body = subparse({"endfor"});
      next();
    }
    expect_block_end();
    open_.pop_back();
    return s;
  }

  StmtPtr parse_set() {
    auto s = stmt(Stmt::Kind::kSet, cur());
    next();
    parse_assign_target(*s, true);
    if (cur().is_op("=")) {
      next();
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    s->kind = Stmt::Kind::kSetBlock;
    if (cur().is_op("|")) error(cur(), "filters on {% set %} blocks", Error::Kind::kUnsupported);
    expect_block_end();
    open_.push_back("set");
    s->body = subparse({"endset"});
    next();
    expect_block_end();
    open_.pop_back();
    return s;
  }

  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!cur().is_op(")")) {
      if (!s.param_names.empty()) expect_op(",");
      if (cur().is_op(")")) break;
      std::string n = expect_identifier();
      s.param_names.push_back(n);
      s.param_slots.push_back(slot(n));
      if (cur().is_op("=")) {
        next();
        s.param_defaults.push_back(parse_expression(true));
      } else {
        s.param_defaults.push_back(nullptr);
      }
    }
    next();
  }

  StmtPtr parse_macro() {
    auto s = stmt(Stmt::Kind::kMacro, cur());
    next();
    s->macro_name = expect_identifier();
    s->macro_slot = slot(s->macro_name);
    parse_signature(*s);
    expect_block_end();
    open_.push_back("macro");
    int saved_depth = loop_depth_;
    loop_depth_ = 0;
    s->body = subparse({"endmacro"});
    loop_depth_ = saved_depth;
    next();
    if (cur().type == T::kName) next();  // {% endmacro name %}
    expect_block_end();
    open_.pop_back();
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = stmt(Stmt::Kind::kCallBlock, cur());
    next();
    if (cur().is_op("(")) parse_signature(*s);
    s->expr = parse_expression(true);
    if (s->expr->kind != Expr::Kind::kCall) error(*s->expr, "expected call");
    expect_block_end();
    open_.push_back("call");
    slot("caller");
    s->body = subparse({"endcall"});
    next();
    expect_block_end();
    open_.pop_back();
    return s;
  }

  [[noreturn]] void error(const Expr& at, const std::string& what) {
    fail(Error::Kind::kSyntax, prog_.name, at.line, at.column, what);
  }

  StmtPtr parse_filter_block() {
    auto s = stmt(Stmt::Kind::kFilterBlock, cur());
    next();
    auto placeholder = node(Expr::Kind::kLiteral, cur());
    placeholder->name = "<block>";  // the block's output takes its place
    s->expr = parse_filter(std::move(placeholder), true);
    expect_block_end();
    open_.push_back("filter");
    s->body = subparse({"endfilter"});
    next();
    expect_block_end();
    open_.pop_back();
    return s;
  }

  StmtPtr parse_generation() {
    auto s = stmt(Stmt::Kind::kGeneration, cur());
    next();
    expect_block_end();
    open_.push_back("generation");
    s->body = subparse({"endgeneration"});
    next();
    expect_block_end();
    open_.pop_back();
    prog_.has_generation = true;
    return s;
  }

  // ---- expressions ----

  // parse_tuple: `a, b` makes a tuple (an explicit tuple needs parentheses elsewhere).
  ExprPtr parse_tuple(bool with_condexpr, std::vector<std::string_view> extra_end = {}) {
    const Token& start = cur();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) {
        if (!cur().is_op(",")) break;
        next();
        is_tuple = true;
      }
      if (tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
    }
    if (!is_tuple) {
      if (items.empty()) error(cur(), "Expected an expression, got " + describe(cur()));
      return std::move(items[0]);
    }
    auto e = node(Expr::Kind::kTuple, start);
    e->args = std::move(items);
    return e;
  }

  bool tuple_end(const std::vector<std::string_view>& extra) const {
    const Token& t = cur();
    if (t.type == T::kVarEnd || t.type == T::kBlockEnd || t.type == T::kEof) return true;
    if (t.is_op(")")) return true;
    for (auto e : extra)
      if (t.is_name(e)) return true;
    return false;
  }

  // Nesting is bounded so a hostile template cannot overflow the stack (here or in the evaluator).
  struct Depth {
    Parser& p;
    explicit Depth(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth)
        p.error(p.cur(), "expressions or blocks nested too deeply (the limit is " + std::to_string(kMaxDepth) + " parser levels)", Error::Kind::kUnsupported);
    }
    ~Depth() { --p.depth_; }
  };
  static constexpr int kMaxDepth = 256;

  ExprPtr parse_expression(bool with_condexpr) {
    Depth guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    const Token& start = cur();
    ExprPtr expr1 = parse_or();
    while (cur().is_name("if")) {
      next();
      ExprPtr cond = parse_or();
      ExprPtr expr3;
      if (cur().is_name("else")) {
        next();
        expr3 = parse_condexpr();
      }
      auto e = node(Expr::Kind::kCond, start);
      e->args.push_back(std::move(cond));
      e->args.push_back(std::move(expr1));
      e->args.push_back(std::move(expr3));
      expr1 = std::move(e);
    }
    return expr1;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (cur().is_name("or")) {
      auto e = node(Expr::Kind::kOr, next());
      e->args.push_back(std::move(left));
      e->args.push_back(parse_and());
      left = std::move(e);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (cur().is_name("and")) {
      auto e = node(Expr::Kind::kAnd, next());
      e->args.push_back(std::move(left));
      e->args.push_back(parse_not());
      left = std::move(e);
    }
    return left;
  }

  ExprPtr parse_not() {
    Depth guard(*this);
    if (cur().is_name("not")) {
      auto e = node(Expr::Kind::kNot, next());
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& start = cur();
    ExprPtr expr = parse_math1();
    std::vector<Expr::Op> ops;
    std::vector<ExprPtr> operands;
    while (true) {
      const Token& t = cur();
      Expr::Op op;
      if (t.is_op("==")) op = Expr::Op::kEq;
      else if (t.is_op("!=")) op = Expr::Op::kNe;
      else if (t.is_op("<")) op = Expr::Op::kLt;
      else if (t.is_op("<=")) op = Expr::Op::kLe;
      else if (t.is_op(">")) op = Expr::Op::kGt;
      else if (t.is_op(">=")) op = Expr::Op::kGe;
      else if (t.is_name("in")) op = Expr::Op::kIn;
      else if (t.is_name("not") && peek().is_name("in")) { next(); op = Expr::Op::kNotIn; }
      else break;
      next();
      ops.push_back(op);
      operands.push_back(parse_math1());
    }
    if (ops.empty()) return expr;
    auto e = node(Expr::Kind::kCompare, start);
    e->args.push_back(std::move(expr));
    for (auto& o : operands) e->args.push_back(std::move(o));
    e->ops = std::move(ops);
    return e;
  }

  ExprPtr binary(Expr::Op op, ExprPtr l, ExprPtr r, const Token& at) {
    auto e = node(Expr::Kind::kBinary, at);
    e->op = op;
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (cur().is_op("+") || cur().is_op("-")) {
      const Token& t = next();
      left = binary(t.text == "+" ? Expr::Op::kAdd : Expr::Op::kSub, std::move(left), parse_concat(), t);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const Token& start = cur();
    std::vector<ExprPtr> parts;
    parts.push_back(parse_math2());
    while (cur().is_op("~")) {
      next();
      parts.push_back(parse_math2());
    }
    if (parts.size() == 1) return std::move(parts[0]);
    auto e = node(Expr::Kind::kConcat, start);
    e->args = std::move(parts);
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (cur().is_op("*") || cur().is_op("/") || cur().is_op("//") || cur().is_op("%")) {
      const Token& t = next();
      Expr::Op op = t.text == "*" ? Expr::Op::kMul : t.text == "/" ? Expr::Op::kDiv
                    : t.text == "//" ? Expr::Op::kFloorDiv : Expr::Op::kMod;
      left = binary(op, std::move(left), parse_pow(), t);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (cur().is_op("**")) {
      const Token& t = next();
      left = binary(Expr::Op::kPow, std::move(left), parse_unary(true), t);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    Depth guard(*this);
    const Token& t = cur();
    ExprPtr e;
    if (t.is_op("-") || t.is_op("+")) {
      e = node(t.text == "-" ? Expr::Kind::kNeg : Expr::Kind::kPos, next());
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    if (t.type == T::kName) {
      next();
      if (t.text == "true" || t.text == "True") return literal(Value::boolean(true), t);
      if (t.text == "false" || t.text == "False") return literal(Value::boolean(false), t);
      if (t.text == "none" || t.text == "None") return literal(Value::none(), t);
      auto e = node(Expr::Kind::kName, t);
      e->name = t.text;
      e->slot = slot(t.text);
      return e;
    }
    if (t.type == T::kString) {
      auto e = node(Expr::Kind::kLiteral, t);
      e->literal_storage = next().text;
      while (cur().type == T::kString) e->literal_storage += next().text;  // "a" "b" is "ab"
      return e;  // literal is pointed at the storage after parsing (the node may still move)
    }
    if (t.type == T::kInt) {
      next();
      errno = 0;
      long long v = std::strtoll(t.text.c_str(), nullptr, 10);
      if (errno == ERANGE) error(t, "integer literal out of range", Error::Kind::kUnsupported);
      return literal(Value::integer(v), t);
    }
    if (t.type == T::kFloat) {
      next();
      return literal(Value::number(std::strtod(t.text.c_str(), nullptr)), t);
    }
    if (t.is_op("(")) {
      next();
      ExprPtr e = parse_tuple(true);
      if (e->kind != Expr::Kind::kTuple && cur().is_op(")")) {
        next();
        return e;
      }
      expect_op(")");
      return e;
    }
    if (t.is_op("[")) {
      auto e = node(Expr::Kind::kList, next());
      while (!cur().is_op("]")) {
        if (!e->args.empty()) expect_op(",");
        if (cur().is_op("]")) break;
        e->args.push_back(parse_expression(true));
      }
      next();
      return e;
    }
    if (t.is_op("{")) {
      auto e = node(Expr::Kind::kDict, next());
      while (!cur().is_op("}")) {
        if (!e->args.empty()) expect_op(",");
        if (cur().is_op("}")) break;
        e->args.push_back(parse_expression(true));
        expect_op(":");
        e->args.push_back(parse_expression(true));
      }
      next();
      return e;
    }
    error(t, "unexpected " + describe(t));
  }

  ExprPtr literal(Value v, const Token& at) {
    auto e = node(Expr::Kind::kLiteral, at);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Token& t = cur();
      if (t.is_op(".")) {
        next();
        const Token& a = cur();
        if (a.type == T::kName) {
          auto g = node(Expr::Kind::kAttr, a);
          g->name = next().text;
          g->negated = is_dict_method(g->name);  // for kAttr: the name is one of dict's methods
          g->args.push_back(std::move(e));
          e = std::move(g);
        } else if (a.type == T::kInt) {
          auto g = node(Expr::Kind::kItem, a);
          g->args.push_back(std::move(e));
          g->args.push_back(literal(Value::integer(std::strtoll(a.text.c_str(), nullptr, 10)), a));
          next();
          e = std::move(g);
        } else {
          error(a, "expected name or number");
        }
      } else if (t.is_op("[")) {
        next();
        e = parse_subscript(std::move(e), t);
        expect_op("]");
      } else if (t.is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target, const Token& at) {
    // [a], [a:b], [a:b:c], [::-1]; a tuple index [a, b] is not used by chat templates.
    ExprPtr parts[3];
    int n = 0;
    bool slice = false;
    auto end = [&] { return cur().is_op("]") || cur().is_op(":"); };
    if (!end()) parts[0] = parse_expression(true);
    while (cur().is_op(":") && n < 2) {
      next();
      slice = true;
      ++n;
      if (!end()) parts[n] = parse_expression(true);
    }
    if (!slice) {
      if (!parts[0]) parts[0] = node(Expr::Kind::kTuple, cur());  // x[] is x[()]
      if (cur().is_op(",")) {
        // x[a, b]: the key is the tuple (a, b).
        auto key = node(Expr::Kind::kTuple, cur());
        key->args.push_back(std::move(parts[0]));
        while (cur().is_op(",")) {
          next();
          if (cur().is_op("]")) break;
          key->args.push_back(parse_expression(true));
        }
        parts[0] = std::move(key);
      }
      auto e = node(Expr::Kind::kItem, at);
      e->args.push_back(std::move(target));
      e->args.push_back(std::move(parts[0]));
      return e;
    }
    auto e = node(Expr::Kind::kSlice, at);
    e->args.push_back(std::move(target));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  // Call arguments into e->args (after whatever is already there) and e->kwargs.
  void parse_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!cur().is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (cur().is_op(")")) break;
      if (cur().is_op("*") || cur().is_op("**")) error(cur(), "*args and **kwargs in calls", Error::Kind::kUnsupported);
      if (cur().type == T::kName && peek().is_op("=")) {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(key, parse_expression(true));
      } else {
        if (!e.kwargs.empty()) error(cur(), "Invalid argument syntax: positional argument follows keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = node(Expr::Kind::kCall, cur());
    e->line = callee->line;
    e->column = callee->column;
    if (callee->kind == Expr::Kind::kAttr) e->slot = find_method(callee->name);
    e->args.push_back(std::move(callee));
    parse_args(*e);
    return e;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (cur().is_op("|")) {
        e = parse_filter(std::move(e), false);
      } else if (cur().is_name("is")) {
        e = parse_test(std::move(e));
      } else if (cur().is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_filter(ExprPtr e, bool start_inline) {
    while (cur().is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      const Token& at = cur();
      std::string name = expect_identifier();
      while (cur().is_op(".")) {
        next();
        name += "." + expect_identifier();
      }
      int id = find_filter(name);
      if (id < 0) error(at, "No filter named '" + name + "'.");
      if (filter_unsupported(static_cast<Filter>(id)))
        error(at, "the '" + name + "' filter", Error::Kind::kUnsupported);
      auto f = node(Expr::Kind::kFilter, at);
      f->name = name;
      f->slot = id;
      f->args.push_back(std::move(e));
      if (cur().is_op("(")) parse_args(*f);
      e = std::move(f);
    }
    return e;
  }

  ExprPtr parse_test(ExprPtr e) {
    next();  // is
    bool negated = false;
    if (cur().is_name("not")) {
      next();
      negated = true;
    }
    const Token& at = cur();
    std::string name = expect_identifier();
    while (cur().is_op(".")) {
      next();
      name += "." + expect_identifier();
    }
    int id = find_test(name);
    if (id < 0) error(at, "No test named '" + name + "'.");
    auto t = node(Expr::Kind::kTest, at);
    t->name = name;
    t->slot = id;
    t->negated = negated;
    t->args.push_back(std::move(e));
    const Token& c = cur();
    if (c.is_op("(")) {
      parse_args(*t);
    } else if ((c.type == T::kName || c.type == T::kString || c.type == T::kInt || c.type == T::kFloat ||
                c.is_op("[") || c.is_op("{")) &&
               !c.is_name("else") && !c.is_name("or") && !c.is_name("and")) {
      // `is divisibleby 3`, `is sameas none`: one argument without parentheses.
      if (c.is_name("is")) error(c, "You cannot chain multiple tests with is");
      t->args.push_back(parse_postfix(parse_primary()));
    }
    return t;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  Program& prog_;
  std::map<std::string, int> slots_;
  std::vector<std::string> open_;
  int loop_depth_ = 0;
  int depth_ = 0;
};

void point_literals(Expr& e) {
  if (e.kind == Expr::Kind::kLiteral && !e.literal_storage.empty()) e.literal = Value::view(e.literal_storage);
  if (e.kind == Expr::Kind::kLiteral && e.literal.is_undefined() && e.literal_storage.empty() && e.name.empty())
    e.literal = Value::view(e.literal_storage);  // the empty string literal ''
  for (auto& a : e.args)
    if (a) point_literals(*a);
  for (auto& [k, v] : e.kwargs)
    if (v) point_literals(*v);
}

void point_literals(Body& body) {
  for (auto& s : body) {
    if (s->expr) point_literals(*s->expr);
    if (s->loop_filter) point_literals(*s->loop_filter);
    for (auto& c : s->conditions) point_literals(*c);
    for (auto& b : s->bodies) point_literals(b);
    for (auto& d : s->param_defaults)
      if (d) point_literals(*d);
    point_literals(s->body);
    point_literals(s->else_body);
  }
}

}  // namespace

std::unique_ptr<Program> parse_program(std::string_view source, const std::string& name) {
  auto prog = std::make_unique<Program>();
  prog->name = name;
  Parser(tokenize(source, name), *prog).parse();
  point_literals(prog->body);
  return prog;
}

}  // namespace air::jinja
