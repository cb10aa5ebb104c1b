// Shared between the parser and the evaluator: the template's syntax tree, the loop object, callables,
// and small UTF-8 helpers.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/jinja/jinja.h"
#include "trainer/jinja/value.h"

namespace air::jinja {

// Decodes the code point at s[i] (invalid bytes decode as themselves); *len gets its length in bytes.
uint32_t decode_utf8(std::string_view s, size_t i, size_t* len);
void append_utf8(uint32_t cp, std::string& out);
// Python's str.isspace() for the code point at s[i]; *len gets its length (0 when it is not a space).
size_t py_space_at(std::string_view s, size_t i);
size_t py_space_before(std::string_view s, size_t end);  // the length of the space ending at `end`, or 0

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Expr {
  enum class Kind {
    kLiteral, kName, kAttr, kItem, kSlice, kCall, kFilter, kTest, kNeg, kPos, kNot, kAnd, kOr, kBinary,
    kCompare, kCond, kList, kTuple, kDict, kConcat,
  };
  enum class Op { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };
  Kind kind;
  int line = 0, column = 0;
  Op op = Op::kAdd;
  Value literal;
  std::string literal_storage;  // a string literal's text (literal views it)
  std::string name;  // variable, attribute, filter or test name
  int slot = -1;     // kName: the variable's id; kFilter / kTest: the builtin's id
  bool negated = false;  // kTest: `is not`; kAttr: the name is a dict method (jinja2's getattr finds it first)
  std::vector<ExprPtr> args;  // operands, call arguments (after the callee / filtered value in args[0])
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<Op> ops;  // kCompare: one per operand after the first
};

struct Stmt {
  enum class Kind {
    kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kCallBlock, kFilterBlock, kGeneration, kBreak,
    kContinue,
  };
  Kind kind;
  int line = 0, column = 0;
  std::string text;  // kText
  ExprPtr expr;      // kOutput; kSet value; kFor iterable; kCallBlock call; kFilterBlock filter chain
  // kIf: conditions[i] guards bodies[i]; a trailing body without condition is the else.
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  // kFor / kSet targets: names (slots) or ns.attr (target_attr non-empty).
  std::vector<int> target_slots;
  std::vector<std::string> target_names;
  std::string target_attr;
  ExprPtr loop_filter;  // kFor: `for x in y if cond`
  bool recursive = false;
  Body body;
  Body else_body;
  // kMacro / kCallBlock: parameters (slots, names and defaults).
  std::string macro_name;
  int macro_slot = -1;
  std::vector<int> param_slots;
  std::vector<std::string> param_names;
  std::vector<ExprPtr> param_defaults;  // null where none
};

struct LoopState {
  const List* items = nullptr;
  size_t index = 0;
  size_t length = 0;
  // loop.cycle and friends need nothing more; changed(...) is not supported.
};

class Evaluator;
struct Callable {
  enum class Kind { kBuiltin, kMacro };
  Kind kind;
  std::string name;
  int builtin = -1;           // kBuiltin: the global's id
  const Stmt* macro = nullptr;  // kMacro: the definition (lives as long as the template)
  std::shared_ptr<const Callable> caller;  // kMacro called from {% call %}: the caller body
  const Body* caller_body = nullptr;
  std::vector<int> caller_param_slots;
};

struct Program {
  Body body;
  std::vector<std::string> names;  // slot -> variable name
  bool has_generation = false;
  int loop_slot = -1;    // the slot of `loop`, where the template uses it
  int caller_slot = -1;  // the slot of `caller`
  std::vector<std::pair<int, int>> global_slots;  // (slot, Global) of the globals the template names
  std::string name;
};

// Parses a template source into a Program. Throws Error.
std::unique_ptr<Program> parse_program(std::string_view source, const std::string& name);

bool is_dict_method(std::string_view name);

[[noreturn]] void fail(Error::Kind kind, const std::string& name, int line, int column, const std::string& what);

}  // namespace air::jinja
