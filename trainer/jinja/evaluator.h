// One render of a parsed template: variables in slots (scopes undo their assignments on exit, as jinja2's
// loop bodies, macros and call blocks do), the output buffer, the {% generation %} spans.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "trainer/jinja/runtime.h"

namespace air::jinja {

class Evaluator {
 public:
  Evaluator(const Program& program, const RenderOptions& options);

  void set_variable(int slot, Value v) { slots_[slot] = std::move(v); }
  Rendered run();

  // Used by the builtins (builtins.cc).
  Value eval(const Expr& e);
  [[noreturn]] void error(const Expr& at, const std::string& what, Error::Kind kind = Error::Kind::kRuntime) const;
  // Raises jinja2's UndefinedError for `v` at `at` when v is undefined.
  void require_defined(const Value& v, const Expr& at) const;
  Value call_filter(const Expr& e, const Value& input);
  Value call_filter_named(const Expr& at, std::string_view name, const Value& input, const std::vector<Value>& args);
  bool call_test(const Expr& at, int test, const Value& v, const std::vector<Value>& args);
  Value call_method(const Expr& call, const Value& object, const std::string& method);
  Value call_global(const Expr& call, int global);
  Value format_percent(const Expr& at, std::string_view fmt, const Value& args);
  Value call_macro(const Expr& call, const Callable& macro);
  Value get_attr(const Value& obj, std::string_view name);
  Value get_item(const Value& obj, const Value& key, const Expr& at);
  // Items of an iterable value (list, dict keys, string characters); errors where Python's iter() fails.
  std::shared_ptr<const List> iterate(const Value& v, const Expr& at);
  const RenderOptions& options() const { return options_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Flow exec(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_for(const Stmt& s);
  void assign(int slot, Value v);
  size_t open_scope() const { return undo_.size(); }
  void close_scope(size_t mark);
  Value eval_binary(const Expr& e);
  Value binary_op(const Expr& e, Value a, Value b);
  Value checked(const Expr& e, bool overflowed, int64_t v);
  Value checked_add(const Expr& e, int64_t a, int64_t b);
  Value checked_sub(const Expr& e, int64_t a, int64_t b);
  Value checked_mul(const Expr& e, int64_t a, int64_t b);
  Value to_int(const Expr& at, double d);
  Value lazy(const std::function<List()>& work);  // Python's int(float), within 64 bits
  bool eval_add_chain(const Expr& e, Value* result, std::string* direct);
  Value eval_compare(const Expr& e);
  Value eval_call(const Expr& e);
  Value eval_slice(const Expr& e);
  void output(const Value& v, const Expr& at);
  std::string capture(const Body& body);

  const Program& program_;
  const RenderOptions& options_;
  std::vector<Value> slots_;
  struct Saved {
    int slot;
    Value old;
  };
  std::vector<Saved> undo_;
  size_t scope_mark_ = 0;  // undo_ entries from here belong to the innermost scope
  int scope_depth_ = 0;
  std::string out_storage_;
  std::string* out_ = &out_storage_;
  std::vector<std::pair<size_t, size_t>> spans_;
  const Body* caller_body_ = nullptr;
  int call_depth_ = 0;
};

}  // namespace air::jinja
