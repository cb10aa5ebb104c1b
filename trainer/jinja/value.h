// The engine's values: what Python objects are to jinja2 (None, bool, int, float, str, list, dict, the
// namespace() object, loop, callables, and jinja2's Undefined), with Python's str(), repr(), truthiness,
// equality and ordering. Strings are views: into the template's literals, into the render's JSON context
// (no copy of message contents), or into an owned buffer for strings the template builds.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainer/jinja/jinja.h"

namespace air::jinja {

class Value;
using List = std::vector<Value>;
struct Dict;
struct Namespace;
struct LoopState;
struct Callable;
struct Generator;

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kLoop, kCallable, kGenerator,
  };

  Value() = default;  // undefined
  static Value none() { Value v; v.kind_ = Kind::kNone; return v; }
  static Value boolean(bool b) { Value v; v.kind_ = Kind::kBool; v.i_ = b; return v; }
  static Value integer(int64_t i) { Value v; v.kind_ = Kind::kInt; v.i_ = i; return v; }
  static Value number(double f) { Value v; v.kind_ = Kind::kFloat; v.f_ = f; return v; }
  // A string that lives as long as the render (template literal, context JSON).
  static Value view(std::string_view s) { Value v; v.kind_ = Kind::kString; v.s_ = s; return v; }
  static Value string(std::string s);
  // A part of the string `str` (a view into it that keeps its owner alive): no copy.
  static Value substring(const Value& str, std::string_view part) {
    Value v = str;
    v.s_ = part;
    return v;
  }
  static Value list(List items);
  static Value list(std::shared_ptr<const List> items);
  // A Python tuple: a list that prints as (a, b) and is not equal to a list (dict items, (a, b) literals).
  static Value tuple(List items) {
    Value v = list(std::move(items));
    v.tuple_ = true;
    return v;
  }
  static Value dict(std::shared_ptr<const Dict> d);
  static Value ns(std::shared_ptr<Namespace> n);
  static Value loop(std::shared_ptr<LoopState> l);
  static Value callable(std::shared_ptr<const Callable> c);
  // What jinja2's select / map / unique / batch / items filters (and reversed()) return: a one-pass iterator,
  // always true, without len(), printed as its address.
  static Value generator(List items, const char* type_name = "generator");
  // jinja2's Undefined, remembering why (for the error when it is used as a value): "'x' is undefined",
  // "'dict object' has no attribute 'y'".
  static Value undefined(std::string hint);
  // The same without allocating: `name` outlives the render (it is the template's); `owner` is the kind of
  // object that lacked it (kUndefined: a variable that does not exist).
  static Value missing(std::string_view name, Kind owner) {
    Value v;
    v.s_ = name;
    v.i_ = static_cast<int64_t>(owner);
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  // A variable slot nothing was ever assigned to (Value()).
  bool is_unset() const { return kind_ == Kind::kUndefined && s_.empty() && i_ == 0 && !ptr_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_tuple() const { return tuple_; }

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }
  double as_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  std::string_view as_string() const { return s_; }
  const List& as_list() const { return *static_cast<const List*>(ptr_.get()); }
  const Dict& as_dict() const { return *static_cast<const Dict*>(ptr_.get()); }
  Namespace& as_namespace() const { return *const_cast<Namespace*>(static_cast<const Namespace*>(ptr_.get())); }
  LoopState& as_loop() const { return *const_cast<LoopState*>(static_cast<const LoopState*>(ptr_.get())); }
  const Callable& as_callable() const { return *static_cast<const Callable*>(ptr_.get()); }
  Generator& as_generator() const { return *const_cast<Generator*>(static_cast<const Generator*>(ptr_.get())); }
  // jinja2's message for using this Undefined: "'x' is undefined", "'dict object' has no attribute 'x'".
  std::string undefined_message() const;

  bool truthy() const;
  // Python's type name ("str", "int", "list", "dict", "NoneType", ...) for error messages.
  std::string_view type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool tuple_ = false;
  union {
    int64_t i_ = 0;
    double f_;
  };
  std::string_view s_;
  std::shared_ptr<const void> ptr_;
};

// Python dicts keep insertion order; keys are strings in every chat template (JSON objects).
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
};

struct Generator {
  List items;
  size_t cursor = 0;  // items before it have been consumed
  const char* type_name = "generator";
  std::shared_ptr<const Error> error;  // met while computing: raised when the generator is consumed
};

// namespace(...): the one mutable object templates have ({% set ns.x = ... %}).
struct Namespace {
  std::vector<std::pair<std::string, Value>> attrs;
  Value* find(std::string_view name);
};

// Python semantics used by the evaluator and the filters.
bool py_equal(const Value& a, const Value& b);
// <0, 0, >0; false when the two cannot be ordered (Python's TypeError).
bool py_compare(const Value& a, const Value& b, int* out);
// str(v) appended to `out` (None -> "None", True -> "True", lists and dicts as their repr, Undefined -> "").
void py_str(const Value& v, std::string& out);
std::string py_str(const Value& v);
void py_repr(const Value& v, std::string& out);
void py_float_repr(double f, std::string& out);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  int indent = -1;  // -1: None
  std::string indent_str;  // when indent is given as a string
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
// Python's json.dumps; false (with `bad` naming the type) when a value is not JSON serialisable.
bool json_dumps(const Value& v, const JsonDumpOptions& options, std::string& out, std::string* bad);

}  // namespace air::jinja
