// The evaluator: statements and expressions of a parsed template over a render's variables, with
// jinja2's scoping (a loop body's and a macro's assignments do not leak out), Python's operators and
// jinja2's Undefined; plus Template (parse once, render from any thread).
#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "trainer/jinja/builtins.h"
#include "trainer/jinja/evaluator.h"
#include "trainer/jinja/jinja.h"

namespace air::jinja {

Evaluator::Evaluator(const Program& program, const RenderOptions& options)
    : program_(program), options_(options), slots_(program.names.size()) {
  static const std::vector<std::shared_ptr<const Callable>> globals = [] {
    std::vector<std::shared_ptr<const Callable>> g;
    const char* names[] = {"raise_exception", "strftime_now", "namespace", "range", "dict", "lipsum", "cycler", "joiner"};
    for (const char* n : names) {
      auto c = std::make_shared<Callable>();
      c->kind = Callable::Kind::kBuiltin;
      c->name = n;
      c->builtin = find_global(n);
      g.push_back(std::move(c));
    }
    return g;
  }();
  for (auto [slot, g] : program.global_slots) slots_[slot] = Value::callable(globals[g]);
}

Rendered Evaluator::run() {
  out_storage_.reserve(1024);
  exec(program_.body);
  return Rendered{std::move(out_storage_), std::move(spans_)};
}

void Evaluator::error(const Expr& at, const std::string& what, Error::Kind kind) const {
  fail(kind, program_.name, at.line, at.column, what);
}

void Evaluator::require_defined(const Value& v, const Expr& at) const {
  if (v.is_undefined()) error(at, v.undefined_message());
}

void Evaluator::assign(int slot, Value v) {
  if (scope_depth_ > 0) {
    bool saved = false;
    for (size_t i = scope_mark_; i < undo_.size(); ++i)
      if (undo_[i].slot == slot) { saved = true; break; }
    if (!saved) undo_.push_back({slot, std::move(slots_[slot])});
  }
  slots_[slot] = std::move(v);
}

void Evaluator::close_scope(size_t prev_mark) {
  while (undo_.size() > scope_mark_) {
    Saved& s = undo_.back();
    slots_[s.slot] = std::move(s.old);
    undo_.pop_back();
  }
  scope_mark_ = prev_mark;
  --scope_depth_;
}

bool is_dict_method(std::string_view name) {
  static const char* const kDictMethods[] = {"items", "keys", "values", "get", "pop", "update", "setdefault",
                                             "clear", "popitem", "copy", "fromkeys"};
  for (const char* m : kDictMethods)
    if (name == m) return true;
  return false;
}

#define AIR_JINJA_OPEN_SCOPE(var) \
  size_t var = scope_mark_;       \
  scope_mark_ = undo_.size();     \
  ++scope_depth_

Evaluator::Flow Evaluator::exec(const Body& body) {
  for (const StmtPtr& s : body) {
    Flow f = exec(*s);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

std::string Evaluator::capture(const Body& body) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  AIR_JINJA_OPEN_SCOPE(prev);
  exec(body);
  close_scope(prev);
  out_ = saved;
  return buffer;
}

void Evaluator::output(const Value& v, const Expr& at) {
  if (v.is_string()) {
    *out_ += v.as_string();
    return;
  }
  if (v.kind() == Value::Kind::kGenerator)
    error(at, "printing a " + std::string(v.type_name()) + " (jinja2 prints its address; add |list)", Error::Kind::kUnsupported);
  py_str(v, *out_);
}

Evaluator::Flow Evaluator::exec(const Stmt& s) {
  switch (s.kind) {
    case Stmt::Kind::kText: *out_ += s.text; return Flow::kNormal;
    case Stmt::Kind::kOutput: {
      const Expr& e = *s.expr;
      if (e.kind == Expr::Kind::kBinary && e.op == Expr::Op::kAdd) {
        Value v;
        if (!eval_add_chain(e, &v, out_)) output(v, e);
        return Flow::kNormal;
      }
      Value tmp;
      output(*eval_ref(e, tmp), e);
      return Flow::kNormal;
    }
    case Stmt::Kind::kIf:
      for (size_t i = 0; i < s.bodies.size(); ++i) {
        if (i < s.conditions.size()) {
          Value tmp;
          if (!eval_ref(*s.conditions[i], tmp)->truthy()) continue;
        }
        return exec(s.bodies[i]);
      }
      return Flow::kNormal;
    case Stmt::Kind::kFor: return exec_for(s);
    case Stmt::Kind::kSet: {
      Value v = eval(*s.expr);
      if (!s.target_attr.empty()) {
        const Value& target = slots_[s.target_slots[0]];
        if (target.kind() != Value::Kind::kNamespace)
          fail(Error::Kind::kRuntime, program_.name, s.line, s.column, "cannot assign attribute on non-namespace object");
        Namespace& ns = target.as_namespace();
        if (Value* slot = ns.find(s.target_attr)) *slot = std::move(v);
        else ns.attrs.emplace_back(s.target_attr, std::move(v));
        return Flow::kNormal;
      }
      if (s.target_slots.size() == 1) {
        assign(s.target_slots[0], std::move(v));
        return Flow::kNormal;
      }
      auto items = iterate(v, *s.expr);
      if (items->size() != s.target_slots.size())
        fail(Error::Kind::kRuntime, program_.name, s.line, s.column,
             items->size() > s.target_slots.size() ? "too many values to unpack" : "not enough values to unpack");
      for (size_t i = 0; i < items->size(); ++i) assign(s.target_slots[i], (*items)[i]);
      return Flow::kNormal;
    }
    case Stmt::Kind::kSetBlock: {
      std::string text = capture(s.body);
      assign(s.target_slots[0], Value::string(std::move(text)));
      return Flow::kNormal;
    }
    case Stmt::Kind::kMacro: {
      auto c = std::make_shared<Callable>();
      c->kind = Callable::Kind::kMacro;
      c->name = s.macro_name;
      c->macro = &s;
      assign(s.macro_slot, Value::callable(std::move(c)));
      return Flow::kNormal;
    }
    case Stmt::Kind::kCallBlock: {
      // The body becomes `caller` inside the called macro.
      const Expr& call = *s.expr;
      Value callee = eval(*call.args[0]);
      if (callee.kind() != Value::Kind::kCallable || callee.as_callable().kind != Callable::Kind::kMacro)
        error(call, "{% call %} needs a macro");
      const Body* saved = caller_body_;
      caller_body_ = &s.body;
      Value v = call_macro(call, callee.as_callable());
      caller_body_ = saved;
      output(v, call);
      return Flow::kNormal;
    }
    case Stmt::Kind::kFilterBlock: {
      std::string text = capture(s.body);
      // The chain's innermost value is the placeholder: apply filters from the inside out.
      std::vector<const Expr*> chain;
      for (const Expr* e = s.expr.get(); e->kind == Expr::Kind::kFilter; e = e->args[0].get()) chain.push_back(e);
      Value v = Value::string(std::move(text));
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) v = call_filter(**it, v);
      output(v, *s.expr);
      return Flow::kNormal;
    }
    case Stmt::Kind::kGeneration: {
      // transformers' AssistantTracker: a call block whose output's span is recorded.
      size_t start = out_->size();
      AIR_JINJA_OPEN_SCOPE(prev);
      exec(s.body);
      close_scope(prev);
      if (out_ == &out_storage_) spans_.emplace_back(start, out_->size());
      return Flow::kNormal;
    }
    case Stmt::Kind::kBreak: return Flow::kBreak;
    case Stmt::Kind::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec_for(const Stmt& s) {
  Value iterable = eval(*s.expr);
  std::shared_ptr<const List> items = iterate(iterable, *s.expr);
  auto bind = [&](const Value& item) {
    if (s.target_slots.size() == 1) {
      assign(s.target_slots[0], item);
      return;
    }
    auto parts = iterate(item, *s.expr);
    if (parts->size() != s.target_slots.size())
      fail(Error::Kind::kRuntime, program_.name, s.line, s.column,
           parts->size() > s.target_slots.size() ? "too many values to unpack (expected " + std::to_string(s.target_slots.size()) + ")"
                                                 : "not enough values to unpack (expected " + std::to_string(s.target_slots.size()) + ", got " + std::to_string(parts->size()) + ")");
    for (size_t i = 0; i < parts->size(); ++i) assign(s.target_slots[i], (*parts)[i]);
  };
  if (s.loop_filter) {
    List kept;
    for (const Value& item : *items) {
      AIR_JINJA_OPEN_SCOPE(prev);
      bind(item);
      bool keep = eval(*s.loop_filter).truthy();
      close_scope(prev);
      if (keep) kept.push_back(item);
    }
    items = std::make_shared<const List>(std::move(kept));
  }
  if (items->empty()) {
    AIR_JINJA_OPEN_SCOPE(prev);
    exec(s.else_body);
    close_scope(prev);
    return Flow::kNormal;
  }
  int loop_slot = program_.loop_slot;
  std::shared_ptr<LoopState> state;
  Value loop_value;
  if (loop_slot >= 0) {
    state = std::make_shared<LoopState>();
    state->items = items.get();
    state->length = items->size();
    loop_value = Value::loop(state);
  }
  for (size_t i = 0; i < items->size(); ++i) {
    AIR_JINJA_OPEN_SCOPE(prev);
    bind((*items)[i]);
    if (state) {
      state->index = i;
      assign(loop_slot, loop_value);
    }
    Flow f = exec(s.body);
    close_scope(prev);
    if (f == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

// ---- expressions ----

Value Evaluator::eval(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.literal;
    case Expr::Kind::kName: {
      const Value& v = slots_[e.slot];
      if (v.is_unset()) return Value::missing(e.name, Value::Kind::kUndefined);
      return v;
    }
    case Expr::Kind::kAttr:
    case Expr::Kind::kItem: {
      Value tmp;
      return *eval_ref(e, tmp);
    }
    case Expr::Kind::kSlice: return eval_slice(e);
    case Expr::Kind::kCall: return eval_call(e);
    case Expr::Kind::kFilter: {
      Value tmp;
      return call_filter(e, *eval_ref(*e.args[0], tmp));
    }
    case Expr::Kind::kTest: {
      Value tmp;
      const Value& v = *eval_ref(*e.args[0], tmp);
      std::vector<Value> args;
      for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i]));
      bool r = call_test(e, e.slot, v, args);
      return Value::boolean(r != e.negated);
    }
    case Expr::Kind::kNeg:
    case Expr::Kind::kPos: {
      Value v = eval(*e.args[0]);
      require_defined(v, e);
      if (v.kind() == Value::Kind::kFloat) return Value::number(e.kind == Expr::Kind::kNeg ? -v.as_float() : v.as_float());
      if (v.is_number()) {
        if (e.kind == Expr::Kind::kNeg && v.as_int() == INT64_MIN) checked(e, true, 0);
        return Value::integer(e.kind == Expr::Kind::kNeg ? -v.as_int() : v.as_int());
      }
      error(e, std::string("bad operand type for unary ") + (e.kind == Expr::Kind::kNeg ? "-" : "+") + ": '" + std::string(v.type_name()) + "'");
    }
    case Expr::Kind::kNot: return Value::boolean(!eval(*e.args[0]).truthy());
    case Expr::Kind::kAnd: {
      Value l = eval(*e.args[0]);
      if (!l.truthy()) return l;
      return eval(*e.args[1]);
    }
    case Expr::Kind::kOr: {
      Value l = eval(*e.args[0]);
      if (l.truthy()) return l;
      return eval(*e.args[1]);
    }
    case Expr::Kind::kBinary: return eval_binary(e);
    case Expr::Kind::kCompare: return eval_compare(e);
    case Expr::Kind::kCond: {
      if (eval(*e.args[0]).truthy()) return eval(*e.args[1]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      List items;
      items.reserve(e.args.size());
      for (const ExprPtr& a : e.args) items.push_back(eval(*a));
      return e.kind == Expr::Kind::kTuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    case Expr::Kind::kDict: {
      auto d = std::make_shared<Dict>();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i]);
        Value v = eval(*e.args[i + 1]);
        bool replaced = false;
        for (auto& [ek, ev] : d->items)
          if (py_equal(ek, k)) { ev = v; replaced = true; break; }
        if (!replaced) d->items.emplace_back(std::move(k), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::kConcat: {
      std::string s;
      for (const ExprPtr& a : e.args) {
        Value v = eval(*a);
        if (v.kind() == Value::Kind::kGenerator)
          error(*a, "printing a " + std::string(v.type_name()) + " (jinja2 prints its address; add |list)", Error::Kind::kUnsupported);
        py_str(v, s);
      }
      return Value::string(std::move(s));
    }
  }
  error(e, "unknown expression");
}

namespace {

[[noreturn]] void type_error(Evaluator& ev, const Expr& e, const char* op, const Value& a, const Value& b) {
  ev.error(e, std::string("unsupported operand type(s) for ") + op + ": '" + std::string(a.type_name()) + "' and '" +
                  std::string(b.type_name()) + "'");
}

}  // namespace

// Python's integers are unbounded; ours are 64-bit: past that is an error, never a wrapped number.
Value Evaluator::checked(const Expr& e, bool overflowed, int64_t v) {
  if (overflowed) error(e, "integer arithmetic beyond 64 bits (Python's integers are unbounded)", Error::Kind::kUnsupported);
  return Value::integer(v);
}
Value Evaluator::checked_add(const Expr& e, int64_t a, int64_t b) {
  int64_t r;
  bool over = __builtin_add_overflow(a, b, &r);
  return checked(e, over, r);
}
Value Evaluator::checked_sub(const Expr& e, int64_t a, int64_t b) {
  int64_t r;
  bool over = __builtin_sub_overflow(a, b, &r);
  return checked(e, over, r);
}
Value Evaluator::checked_mul(const Expr& e, int64_t a, int64_t b) {
  int64_t r;
  bool over = __builtin_mul_overflow(a, b, &r);
  return checked(e, over, r);
}

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

// `a + b + c ...` (left-associative): the operands are evaluated in order; when all are strings (the
// common case: '<|im_start|>' + message.role + '\n' + ...) they are joined with one allocation, or
// appended straight to `direct` (the output); otherwise folded pair by pair as Python does.
bool Evaluator::eval_add_chain(const Expr& e, Value* result, std::string* direct) {
  const Expr* nodes[32];
  size_t n = 0;
  const Expr* cur = &e;
  while (cur->kind == Expr::Kind::kBinary && cur->op == Expr::Op::kAdd && n < 31) {
    nodes[n++] = cur;
    cur = cur->args[0].get();
  }
  // nodes[n-1] is the innermost `+`; cur is the leftmost operand. Only n + 1 values are constructed.
  struct Values {
    alignas(Value) unsigned char raw[32 * sizeof(Value)];
    size_t count = 0;
    Value& operator[](size_t i) { return reinterpret_cast<Value*>(raw)[i]; }
    void push(Value v) { new (&(*this)[count++]) Value(std::move(v)); }
    ~Values() {
      for (size_t i = 0; i < count; ++i) (*this)[i].~Value();
    }
  } values;
  values.push(eval(*cur));
  bool strings = values[0].is_string();
  size_t total = values[0].as_string().size();
  for (size_t i = 0; i < n; ++i) {
    values.push(eval(*nodes[n - 1 - i]->args[1]));
    strings = strings && values[i + 1].is_string();
    if (strings) total += values[i + 1].as_string().size();
  }
  if (strings) {
    if (direct) {
      for (size_t i = 0; i <= n; ++i) *direct += values[i].as_string();
      return true;
    }
    std::string s;
    s.reserve(total);
    for (size_t i = 0; i <= n; ++i) s += values[i].as_string();
    *result = Value::string(std::move(s));
    return false;
  }
  Value acc = std::move(values[0]);
  for (size_t i = 0; i < n; ++i) acc = binary_op(*nodes[n - 1 - i], std::move(acc), std::move(values[i + 1]));
  *result = std::move(acc);
  return false;
}

Value Evaluator::eval_binary(const Expr& e) {
  if (e.op == Expr::Op::kAdd) {
    Value r;
    eval_add_chain(e, &r, nullptr);
    return r;
  }
  return binary_op(e, eval(*e.args[0]), eval(*e.args[1]));
}

Value Evaluator::binary_op(const Expr& e, Value a, Value b) {
  require_defined(a, *e.args[0]);
  require_defined(b, *e.args[1]);
  using K = Value::Kind;
  bool nums = a.is_number() && b.is_number();
  bool floats = nums && (a.kind() == K::kFloat || b.kind() == K::kFloat);
  switch (e.op) {
    case Expr::Op::kAdd:
      if (nums) return floats ? Value::number(a.as_float() + b.as_float()) : checked_add(e, a.as_int(), b.as_int());
      if (a.is_string() && b.is_string()) {
        std::string s;
        s.reserve(a.as_string().size() + b.as_string().size());
        s += a.as_string();
        s += b.as_string();
        return Value::string(std::move(s));
      }
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        List l = a.as_list();
        l.insert(l.end(), b.as_list().begin(), b.as_list().end());
        return a.is_tuple() ? Value::tuple(std::move(l)) : Value::list(std::move(l));
      }
      if (a.is_list() && b.is_list())
        error(e, std::string("can only concatenate ") + (a.is_tuple() ? "tuple" : "list") + " (not \"" +
                     (b.is_tuple() ? "tuple" : "list") + "\") to " + (a.is_tuple() ? "tuple" : "list"));
      if (a.is_string() || a.is_list())
        error(e, std::string("can only concatenate ") + std::string(a.type_name()) + " (not \"" +
                     std::string(b.type_name()) + "\") to " + std::string(a.type_name()));
      type_error(*this, e, "+", a, b);
    case Expr::Op::kSub:
      if (nums) return floats ? Value::number(a.as_float() - b.as_float()) : checked_sub(e, a.as_int(), b.as_int());
      type_error(*this, e, "-", a, b);
    case Expr::Op::kMul: {
      if (nums) return floats ? Value::number(a.as_float() * b.as_float()) : checked_mul(e, a.as_int(), b.as_int());
      const Value* seq = a.is_string() || a.is_list() ? &a : (b.is_string() || b.is_list() ? &b : nullptr);
      const Value* n = seq == &a ? &b : &a;
      if (seq && n->is_number() && n->kind() != K::kFloat) {
        int64_t times = std::max<int64_t>(0, n->as_int());
        size_t unit = seq->is_string() ? seq->as_string().size() : seq->as_list().size() * sizeof(Value);
        if (times > 0 && unit > 0 && static_cast<uint64_t>(times) > (uint64_t{1} << 30) / unit)
          error(e, "the result of '*' would exceed 1 GiB");
        if (seq->is_string()) {
          std::string s;
          for (int64_t i = 0; i < times; ++i) s += seq->as_string();
          return Value::string(std::move(s));
        }
        List l;
        for (int64_t i = 0; i < times; ++i) l.insert(l.end(), seq->as_list().begin(), seq->as_list().end());
        return seq->is_tuple() ? Value::tuple(std::move(l)) : Value::list(std::move(l));
      }
      type_error(*this, e, "*", a, b);
    }
    case Expr::Op::kDiv:
      if (nums) {
        if (b.as_float() == 0) error(e, "division by zero");
        return Value::number(a.as_float() / b.as_float());
      }
      type_error(*this, e, "/", a, b);
    case Expr::Op::kFloorDiv:
      if (nums) {
        if (b.as_float() == 0) error(e, floats ? "float floor division by zero" : "integer division or modulo by zero");
        if (floats) return Value::number(std::floor(a.as_float() / b.as_float()));
        if (a.as_int() == INT64_MIN && b.as_int() == -1) checked(e, true, 0);
        return Value::integer(floor_div(a.as_int(), b.as_int()));
      }
      type_error(*this, e, "//", a, b);
    case Expr::Op::kMod:
      if (nums) {
        if (b.as_float() == 0) error(e, floats ? "float modulo" : "integer division or modulo by zero");
        if (floats) {
          double r = std::fmod(a.as_float(), b.as_float());
          if (r != 0 && ((r < 0) != (b.as_float() < 0))) r += b.as_float();
          return Value::number(r);
        }
        if (b.as_int() == -1) return Value::integer(0);
        return Value::integer(a.as_int() - floor_div(a.as_int(), b.as_int()) * b.as_int());
      }
      if (a.is_string()) return format_percent(e, a.as_string(), b);
      type_error(*this, e, "%", a, b);
    case Expr::Op::kPow:
      if (nums) {
        if (!floats && b.as_int() >= 0) {
          int64_t r = 1;
          for (int64_t i = 0; i < b.as_int() && r != 0; ++i) {
            r = checked_mul(e, r, a.as_int()).as_int();
            if (r == 1 || (r == -1 && a.as_int() == -1 && (b.as_int() - i - 1) % 2 == 0)) break;
          }
          return Value::integer(r);
        }
        return Value::number(std::pow(a.as_float(), b.as_float()));
      }
      type_error(*this, e, "** or pow()", a, b);
    default: break;
  }
  error(e, "unknown operator");
}

namespace {

// Python's `needle in haystack`; false with *ok = false when Python raises TypeError.
bool contains(const Value& haystack, const Value& needle, std::string* why) {
  switch (haystack.kind()) {
    case Value::Kind::kString:
      if (!needle.is_string()) {
        *why = "'in <string>' requires string as left operand, not " + std::string(needle.type_name());
        return false;
      }
      return haystack.as_string().find(needle.as_string()) != std::string_view::npos;
    case Value::Kind::kList:
      for (const Value& v : haystack.as_list())
        if (py_equal(v, needle)) return true;
      return false;
    case Value::Kind::kDict: return haystack.as_dict().find(needle) != nullptr;
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kGenerator: {  // consumes up to the match
      Generator& g = haystack.as_generator();
      if (g.error) throw *g.error;
      while (g.cursor < g.items.size())
        if (py_equal(g.items[g.cursor++], needle)) return true;
      return false;
    }
    default:
      *why = "argument of type '" + std::string(haystack.type_name()) + "' is not iterable";
      return false;
  }
}

}  // namespace

bool value_in(Evaluator& ev, const Expr& at, const Value& needle, const Value& haystack) {
  std::string why;
  bool r = contains(haystack, needle, &why);
  if (!why.empty()) ev.error(at, why);
  return r;
}

// A variable, a literal, or a key / index inside a dict or list held by one, without copying the value
// (no reference-count traffic); anything else is evaluated into `tmp`. The pointer is good until the
// next assignment (nothing in an expression assigns to what it points into: dicts and lists are immutable).
const Value* Evaluator::eval_ref(const Expr& e, Value& tmp) {
  switch (e.kind) {
    case Expr::Kind::kLiteral: return &e.literal;
    case Expr::Kind::kName: {
      const Value& v = slots_[e.slot];
      if (!v.is_unset()) return &v;
      tmp = Value::missing(e.name, Value::Kind::kUndefined);
      return &tmp;
    }
    case Expr::Kind::kAttr: {
      Value base_tmp;
      const Value* obj = eval_ref(*e.args[0], base_tmp);
      require_defined(*obj, e);
      if (obj->is_dict()) {
        if (e.negated)
          error(e, "'" + e.name + "' names a dict method (jinja2 would give the method object, not the key)",
                Error::Kind::kUnsupported);
        const Value* v = obj->as_dict().find(e.name);
        if (v && obj != &base_tmp) return v;
        tmp = v ? *v : Value::missing(e.name, Value::Kind::kDict);
        return &tmp;
      }
      tmp = get_attr(*obj, e.name);
      return &tmp;
    }
    case Expr::Kind::kItem: {
      Value base_tmp, key_tmp;
      const Value* obj = eval_ref(*e.args[0], base_tmp);
      const Value* key = eval_ref(*e.args[1], key_tmp);
      require_defined(*obj, e);
      if (obj != &base_tmp) {
        if (obj->is_dict()) {
          if (const Value* v = obj->as_dict().find(*key)) return v;
        } else if (obj->is_list() && key->kind() == Value::Kind::kInt) {
          const List& l = obj->as_list();
          int64_t i = key->as_int() < 0 ? key->as_int() + static_cast<int64_t>(l.size()) : key->as_int();
          if (i >= 0 && i < static_cast<int64_t>(l.size())) return &l[i];
        }
      }
      tmp = get_item(*obj, *key, e);
      return &tmp;
    }
    default:
      tmp = eval(e);
      return &tmp;
  }
}

Value Evaluator::eval_compare(const Expr& e) {
  Value left_tmp, right_tmp;
  const Value* left_ptr = eval_ref(*e.args[0], left_tmp);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    const Value* right_ptr = eval_ref(*e.args[i + 1], right_tmp);
    const Value& left = *left_ptr;
    const Value& right = *right_ptr;
    bool r;
    switch (e.ops[i]) {
      case Expr::Op::kEq: r = py_equal(left, right); break;
      case Expr::Op::kNe: r = !py_equal(left, right); break;
      case Expr::Op::kIn: r = value_in(*this, e, left, right); break;
      case Expr::Op::kNotIn: r = !value_in(*this, e, left, right); break;
      default: {
        int c;
        if (left.is_undefined()) require_defined(left, *e.args[i]);
        if (right.is_undefined()) require_defined(right, *e.args[i + 1]);
        const char* sym = e.ops[i] == Expr::Op::kLt ? "<" : e.ops[i] == Expr::Op::kLe ? "<=" : e.ops[i] == Expr::Op::kGt ? ">" : ">=";
        if (!py_compare(left, right, &c))
          error(e, std::string("'") + sym + "' not supported between instances of '" + std::string(left.type_name()) +
                       "' and '" + std::string(right.type_name()) + "'");
        r = e.ops[i] == Expr::Op::kLt ? c < 0 : e.ops[i] == Expr::Op::kLe ? c <= 0 : e.ops[i] == Expr::Op::kGt ? c > 0 : c >= 0;
      }
    }
    if (!r) return Value::boolean(false);
    if (i + 1 < e.ops.size()) {
      left_tmp = right;
      left_ptr = &left_tmp;
    }
  }
  return Value::boolean(true);
}

Value Evaluator::eval_call(const Expr& e) {
  const Expr& callee = *e.args[0];
  if (callee.kind == Expr::Kind::kAttr) {
    Value obj = eval(*callee.args[0]);
    require_defined(obj, callee);
    if (obj.is_dict()) {
      // A dict's own key wins only where it is not a method name (jinja2 getattr looks at methods first).
      if (!callee.negated) {
        const Value* v = obj.as_dict().find(callee.name);
        if (v && v->kind() == Value::Kind::kCallable) return call_macro(e, v->as_callable());
        Value missing = v ? *v : Value::missing(callee.name, Value::Kind::kDict);
        require_defined(missing, callee);
        error(e, "'" + std::string(missing.type_name()) + "' object is not callable");
      }
    }
    return call_method(e, obj, callee.name);
  }
  Value f = eval(callee);
  require_defined(f, callee);
  if (f.kind() != Value::Kind::kCallable) error(e, "'" + std::string(f.type_name()) + "' object is not callable");
  const Callable& c = f.as_callable();
  if (c.kind == Callable::Kind::kBuiltin && c.builtin == -2) return Value::string(capture(*c.caller_body));
  if (c.kind == Callable::Kind::kBuiltin) return call_global(e, c.builtin);
  return call_macro(e, c);
}

Value Evaluator::call_macro(const Expr& call, const Callable& macro) {
  if (macro.kind != Callable::Kind::kMacro) error(call, "'" + macro.name + "' is not a macro");
  const Stmt& m = *macro.macro;
  struct CallDepth {
    int& d;
    explicit CallDepth(int& depth) : d(depth) { ++d; }
    ~CallDepth() { --d; }
  } depth(call_depth_);
  if (call_depth_ > 200) error(call, "maximum recursion depth exceeded (macro '" + m.macro_name + "')");
  if (call.args.size() - 1 > m.param_slots.size())
    error(call, "macro '" + m.macro_name + "' takes not more than " + std::to_string(m.param_slots.size()) + " argument(s)");
  std::vector<Value> values(m.param_slots.size());
  std::vector<bool> given(m.param_slots.size());
  for (size_t i = 1; i < call.args.size(); ++i) {
    values[i - 1] = eval(*call.args[i]);
    given[i - 1] = true;
  }
  for (const auto& [key, expr] : call.kwargs) {
    size_t i = 0;
    while (i < m.param_names.size() && m.param_names[i] != key) ++i;
    if (i == m.param_names.size()) error(call, "macro '" + m.macro_name + "' takes no keyword argument '" + key + "'");
    values[i] = eval(*expr);
    given[i] = true;
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (!given[i] && m.param_defaults[i]) values[i] = eval(*m.param_defaults[i]);
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  AIR_JINJA_OPEN_SCOPE(prev);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!given[i] && !m.param_defaults[i]) assign(m.param_slots[i], Value::missing(m.param_names[i], Value::Kind::kUndefined));
    else assign(m.param_slots[i], std::move(values[i]));
  }
  if (caller_body_ && program_.caller_slot >= 0) {
    auto c = std::make_shared<Callable>();
    c->kind = Callable::Kind::kBuiltin;
    c->name = "caller";
    c->builtin = -2;
    c->caller_body = caller_body_;
    assign(program_.caller_slot, Value::callable(std::move(c)));
  }
  const Body* saved_caller = caller_body_;
  caller_body_ = nullptr;
  exec(m.body);
  caller_body_ = saved_caller;
  close_scope(prev);
  out_ = saved;
  return Value::string(std::move(buffer));
}

Value Evaluator::eval_slice(const Expr& e) {
  Value obj = eval(*e.args[0]);
  require_defined(obj, e);
  auto bound = [&](int i) -> std::optional<int64_t> {
    if (!e.args[i]) return std::nullopt;
    Value v = eval(*e.args[i]);
    if (v.is_none()) return std::nullopt;
    if (!v.is_number() || v.kind() == Value::Kind::kFloat)
      error(e, "slice indices must be integers or None or have an __index__ method");
    return v.as_int();
  };
  std::optional<int64_t> start = bound(1), stop = bound(2), step_opt = bound(3);
  int64_t step = step_opt.value_or(1);
  if (step == 0) error(e, "slice step cannot be zero");
  // Python's slice.indices().
  auto indices = [&](int64_t len, std::vector<int64_t>& out) {
    auto clamp = [&](std::optional<int64_t> v, int64_t def_pos, int64_t def_neg) {
      if (!v) return step > 0 ? def_pos : def_neg;
      int64_t x = *v;
      if (x < 0) x += len;
      if (step > 0) return std::clamp<int64_t>(x, 0, len);
      return std::clamp<int64_t>(x, -1, len - 1);
    };
    int64_t lo = clamp(start, 0, len - 1);
    int64_t hi = clamp(stop, len, -1);
    if (step > 0)
      for (int64_t i = lo; i < hi; i += step) out.push_back(i);
    else
      for (int64_t i = lo; i > hi; i += step) out.push_back(i);
  };
  std::vector<int64_t> idx;
  if (obj.is_list()) {
    const List& l = obj.as_list();
    indices(static_cast<int64_t>(l.size()), idx);
    List r;
    r.reserve(idx.size());
    for (int64_t i : idx) r.push_back(l[i]);
    return Value::list(std::move(r));
  }
  if (obj.is_string()) {
    std::string_view s = obj.as_string();
    std::vector<size_t> starts;  // code point offsets
    for (size_t i = 0; i < s.size();) {
      starts.push_back(i);
      size_t len;
      decode_utf8(s, i, &len);
      i += len;
    }
    starts.push_back(s.size());
    indices(static_cast<int64_t>(starts.size() - 1), idx);
    std::string r;
    for (int64_t i : idx) r.append(s.substr(starts[i], starts[i + 1] - starts[i]));
    return Value::string(std::move(r));
  }
  error(e, "'" + std::string(obj.type_name()) + "' object is not subscriptable");
}

// ---- the Template facade ----

struct Template::Impl {
  std::string source;
  std::unique_ptr<Program> program;
  std::unordered_map<std::string, int> slots;
};

namespace {

template <class Json>
Value from_json(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return Value::integer(static_cast<int64_t>(j.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float: return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::view(j.template get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& item : j) l.push_back(from_json(item));
      return Value::list(std::move(l));
    }
    case nlohmann::json::value_t::object: {
      auto d = std::make_shared<Dict>();
      d->items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) d->items.emplace_back(Value::view(it.key()), from_json(it.value()));
      return Value::dict(std::move(d));
    }
    default: return Value::none();
  }
}

template <class Json>
Rendered render_with(const Template::Impl& impl, const Json& context, const RenderOptions& options,
                     const nlohmann::json* messages = nullptr, size_t count = 0) {
  Evaluator ev(*impl.program, options);
  if (!context.is_object() && !context.is_null())
    throw Error(Error::Kind::kRuntime, impl.program->name + ": the render context must be a JSON object", 1, 1);
  if (context.is_object()) {
    for (auto it = context.begin(); it != context.end(); ++it) {
      auto slot = impl.slots.find(it.key());
      if (slot != impl.slots.end()) ev.set_variable(slot->second, from_json(it.value()));
    }
  }
  if (messages) {
    if (!messages->is_array())
      throw Error(Error::Kind::kRuntime, impl.program->name + ": the messages must be a JSON list", 1, 1);
    auto slot = impl.slots.find("messages");
    if (slot != impl.slots.end()) {
      List l;
      l.reserve(std::min(count, messages->size()));
      for (size_t k = 0; k < count && k < messages->size(); ++k) l.push_back(from_json((*messages)[k]));
      ev.set_variable(slot->second, Value::list(std::move(l)));
    }
  }
  return ev.run();
}

}  // namespace

Template::Template(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

namespace {

// The template's line and a caret under the column, after the message (GCC's form).
Error with_source_line(const Error& e, std::string_view source) {
  std::string_view rest = source;
  for (int line = 1; line < e.line && !rest.empty(); ++line) {
    size_t nl = rest.find_first_of("\r\n");
    if (nl == std::string_view::npos) { rest = {}; break; }
    rest.remove_prefix(nl + (rest.compare(nl, 2, "\r\n") == 0 ? 2 : 1));
  }
  std::string_view text = rest.substr(0, rest.find_first_of("\r\n"));
  if (text.empty() || text.size() > 300) return e;
  std::string caret;
  size_t col = 1;
  for (size_t i = 0; i < text.size() && col < static_cast<size_t>(e.column); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xc0) == 0x80) continue;
    caret += text[i] == '\t' ? '\t' : ' ';
    ++col;
  }
  return Error(e.kind, std::string(e.what()) + "\n    " + std::string(text) + "\n    " + caret + "^", e.line, e.column);
}

}  // namespace

Template Template::parse(std::string_view source, std::string name) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::string(source);
  try {
    impl->program = parse_program(source, name);
  } catch (const Error& e) {
    throw with_source_line(e, source);
  }
  Program& p = *impl->program;
  for (size_t i = 0; i < p.names.size(); ++i) impl->slots.emplace(p.names[i], static_cast<int>(i));
  auto find = [&](const char* n) {
    auto it = impl->slots.find(n);
    return it == impl->slots.end() ? -1 : it->second;
  };
  p.loop_slot = find("loop");
  for (size_t i = 0; i < p.names.size(); ++i)
    if (int g = find_global(p.names[i]); g >= 0) p.global_slots.emplace_back(static_cast<int>(i), g);
  p.caller_slot = find("caller");
  return Template(std::move(impl));
}

// A raised error is the record's (its message is the template author's); others show the template's line.
Rendered Template::render(const nlohmann::json& context, const RenderOptions& options) const {
  try {
    return render_with(*impl_, context, options);
  } catch (const Error& e) {
    if (e.kind == Error::Kind::kRaised) throw;
    throw with_source_line(e, impl_->source);
  }
}

Rendered Template::render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  try {
    return render_with(*impl_, context, options);
  } catch (const Error& e) {
    if (e.kind == Error::Kind::kRaised) throw;
    throw with_source_line(e, impl_->source);
  }
}

Rendered Template::render(const nlohmann::json& context, const nlohmann::json& messages, size_t count,
                          const RenderOptions& options) const {
  try {
    return render_with(*impl_, context, options, &messages, count);
  } catch (const Error& e) {
    if (e.kind == Error::Kind::kRaised) throw;
    throw with_source_line(e, impl_->source);
  }
}

bool Template::has_generation_blocks() const { return impl_->program->has_generation; }
const std::string& Template::name() const { return impl_->program->name; }

}  // namespace air::jinja
