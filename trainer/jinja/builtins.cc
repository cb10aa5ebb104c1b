// jinja2's filters, tests and globals (with transformers' tojson, raise_exception and strftime_now), the
// Python methods templates call on strings, dicts and lists (as ImmutableSandboxedEnvironment allows
// them), and jinja2's attribute / item lookup.
#include "trainer/jinja/builtins.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>

#include "trainer/jinja/evaluator.h"

namespace air::jinja {

bool value_in(Evaluator& ev, const Expr& at, const Value& needle, const Value& haystack);

// ---- UTF-8 ----

uint32_t decode_utf8(std::string_view s, size_t i, size_t* len) {
  unsigned char c = s[i];
  auto cont = [&](size_t k) { return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80; };
  if (c < 0x80) { *len = 1; return c; }
  if ((c & 0xe0) == 0xc0 && cont(1)) { *len = 2; return ((c & 0x1f) << 6) | (s[i + 1] & 0x3f); }
  if ((c & 0xf0) == 0xe0 && cont(1) && cont(2)) {
    *len = 3;
    return ((c & 0x0f) << 12) | ((s[i + 1] & 0x3f) << 6) | (s[i + 2] & 0x3f);
  }
  if ((c & 0xf8) == 0xf0 && cont(1) && cont(2) && cont(3)) {
    *len = 4;
    return ((c & 0x07) << 18) | ((s[i + 1] & 0x3f) << 12) | ((s[i + 2] & 0x3f) << 6) | (s[i + 3] & 0x3f);
  }
  *len = 1;
  return c;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

namespace {

bool is_py_space(uint32_t cp) {
  // str.isspace(): Unicode White_Space plus the separators Python counts (\x1c-\x1f).
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
         cp == 0x3000;
}

bool is_line_break(uint32_t cp) {
  // str.splitlines() boundaries.
  return cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || cp == 0x1c || cp == 0x1d || cp == 0x1e ||
         cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    cps.push_back(decode_utf8(s, i, &len));
    i += len;
  }
  return cps;
}

size_t cp_count(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

}  // namespace

size_t py_space_at(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  unsigned char c = s[i];
  if (c < 0x80) return is_py_space(c) ? 1 : 0;
  size_t len;
  uint32_t cp = decode_utf8(s, i, &len);
  return is_py_space(cp) ? len : 0;
}

size_t py_space_before(std::string_view s, size_t end) {
  if (end == 0) return 0;
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80 && end - start < 4) --start;
  size_t len;
  uint32_t cp = decode_utf8(s, start, &len);
  if (start + len != end) return 0;
  return is_py_space(cp) ? len : 0;
}

// ---- names ----

namespace {

const char* const kFilterNames[] = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape", "first",
    "float", "forceescape", "format", "groupby", "indent", "int", "items", "join", "last", "length", "list",
    "lower", "map", "max", "min", "reject", "rejectattr", "replace", "reverse", "round", "safe", "select",
    "selectattr", "slice", "sort", "string", "striptags", "sum", "title", "tojson", "trim", "truncate",
    "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr", "filesizeformat", "pprint",
    "random"};
const char* const kTestNames[] = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "filter",
    "float", "ge", "gt", "greaterthan", "in", "integer", "iterable", "le", "lower", "lt", "lessthan", "mapping",
    "ne", "none", "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined", "upper"};
const char* const kMethodNames[] = {"append", "capitalize", "clear", "copy", "count", "cycle", "endswith", "extend", "find", "get", "index", "insert", "isalnum", "isalpha", "isdigit", "islower", "isspace", "isupper", "items", "join", "keys", "lower", "lstrip", "pop", "remove", "replace", "reverse", "rfind", "rindex", "rsplit", "rstrip", "sort", "split", "splitlines", "startswith", "strip", "title", "upper", "values"};
const char* const kGlobalNames[] = {"raise_exception", "strftime_now", "namespace", "range", "dict", "lipsum",
                                    "cycler", "joiner"};

template <size_t N>
int index_of(const char* const (&names)[N], std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<int>(i);
  return -1;
}

}  // namespace

int find_filter(std::string_view name) { return index_of(kFilterNames, name); }
int find_global(std::string_view name) { return index_of(kGlobalNames, name); }

int find_method(std::string_view name) {
  int i = index_of(kMethodNames, name);
  return i < 0 ? static_cast<int>(Method::kOther) : i;
}

int find_test(std::string_view name) {
  int i = index_of(kTestNames, name);
  if (i >= 0) {
    // The enum lists kEq..kUpper in the same order as kTestNames.
    static const Test order[] = {Test::kBoolean, Test::kCallable, Test::kDefined, Test::kDivisibleby, Test::kEq,
                                 Test::kEqualto, Test::kEscaped, Test::kEven, Test::kFalse, Test::kFilter,
                                 Test::kFloat, Test::kGe, Test::kGt, Test::kGreaterthan, Test::kIn,
                                 Test::kInteger, Test::kIterable, Test::kLe, Test::kLower, Test::kLt,
                                 Test::kLessthan, Test::kMapping, Test::kNe, Test::kNone, Test::kNumber,
                                 Test::kOdd, Test::kSameas, Test::kSequence, Test::kString, Test::kTest,
                                 Test::kTrue, Test::kUndefined, Test::kUpper};
    return static_cast<int>(order[i]);
  }
  return -1;
}

bool filter_unsupported(Filter f) {
  switch (f) {
    case Filter::kE: case Filter::kEscape: case Filter::kForceescape: case Filter::kFormat: case Filter::kGroupby:
    case Filter::kSlice: case Filter::kStriptags: case Filter::kTruncate: case Filter::kUrlencode:
    case Filter::kUrlize: case Filter::kWordwrap: case Filter::kXmlattr: case Filter::kFilesizeformat:
    case Filter::kPprint: case Filter::kRandom:
      return true;
    default: return false;
  }
}

// ---- string helpers (Python's str methods) ----

namespace {

// Simple case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (Python maps all of
// Unicode; chat templates case-map role names and keywords, rarely content).
uint32_t cp_lower(uint32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if ((c >= 0xc0 && c <= 0xde && c != 0xd7)) return c + 32;
  if (c >= 0x100 && c <= 0x137) return c | 1;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c & 1) ? c + 1 : c;
  if (c >= 0x14a && c <= 0x177) return c | 1;
  if (c == 0x178) return 0xff;
  if ((c >= 0x391 && c <= 0x3a9 && c != 0x3a2)) return c + 32;
  if (c >= 0x410 && c <= 0x42f) return c + 32;
  if (c >= 0x400 && c <= 0x40f) return c + 80;
  return c;
}
uint32_t cp_upper(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c == 0xb5) return 0x39c;
  if ((c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 32;
  if (c == 0xff) return 0x178;
  if (c >= 0x100 && c <= 0x137) return c & ~1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c & 1) ? c : c - 1;
  if (c >= 0x14a && c <= 0x177) return c & ~1u;
  if (c == 0x131) return 'I';
  if (c == 0x17f) return 'S';
  if (c == 0x3c2) return 0x3a3;
  if ((c >= 0x3b1 && c <= 0x3c9)) return c - 32;
  if (c >= 0x430 && c <= 0x44f) return c - 32;
  if (c >= 0x450 && c <= 0x45f) return c - 80;
  return c;
}
bool cp_cased(uint32_t c) { return cp_lower(c) != c || cp_upper(c) != c || c == 0xdf; }

std::string map_case(std::string_view s, bool upper) {
  std::string r;
  r.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char b = s[i];
    if (b < 0x80) {
      r += static_cast<char>(upper ? std::toupper(b) : std::tolower(b));
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp = decode_utf8(s, i, &len);
    if (upper && cp == 0xdf) r += "SS";  // ß
    else append_utf8(upper ? cp_upper(cp) : cp_lower(cp), r);
    i += len;
  }
  return r;
}
std::string lower_case(std::string_view s) { return map_case(s, false); }
std::string upper_case(std::string_view s) { return map_case(s, true); }

// strip / lstrip / rstrip with Python's semantics: whitespace, or any code point of `chars`.
std::string_view py_strip(std::string_view s, const Value* chars, bool left, bool right) {
  std::vector<uint32_t> set;
  bool by_chars = chars && chars->is_string();
  if (by_chars) set = code_points(chars->as_string());
  auto strippable = [&](uint32_t cp) {
    return by_chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_py_space(cp);
  };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e) {
      size_t len;
      uint32_t cp = decode_utf8(s, b, &len);
      if (!strippable(cp)) break;
      b += len;
    }
  }
  if (right) {
    while (e > b) {
      size_t start = e - 1;
      while (start > b && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80) --start;
      size_t len;
      uint32_t cp = decode_utf8(s, start, &len);
      if (!strippable(cp)) break;
      e = start;
    }
  }
  return s.substr(b, e - b);
}

List py_split(const Value& owner, const Value* sep, int64_t maxsplit, bool from_right) {
  std::string_view s = owner.as_string();
  auto piece = [&](std::string_view p) { return Value::substring(owner, p); };
  List out;
  if (!sep || sep->is_none()) {
    // Runs of whitespace; leading and trailing whitespace ignored.
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && py_space_at(s, i)) i += py_space_at(s, i);
      if (i >= s.size()) break;
      size_t start = i;
      while (i < s.size() && !py_space_at(s, i)) ++i;
      words.emplace_back(start, i);
    }
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
      for (auto [a, b] : words) out.push_back(piece(s.substr(a, b - a)));
      return out;
    }
    if (!from_right) {
      for (int64_t k = 0; k < maxsplit; ++k) out.push_back(piece(s.substr(words[k].first, words[k].second - words[k].first)));
      out.push_back(piece(s.substr(words[maxsplit].first)));
    } else {
      size_t keep = words.size() - maxsplit;
      out.push_back(piece(s.substr(0, words[keep - 1].second)));
      for (size_t k = keep; k < words.size(); ++k) out.push_back(piece(s.substr(words[k].first, words[k].second - words[k].first)));
    }
    return out;
  }
  std::string_view d = sep->as_string();
  std::vector<std::string_view> parts;
  if (!from_right) {
    size_t start = 0;
    int64_t n = 0;
    while (maxsplit < 0 || n < maxsplit) {
      size_t at = s.find(d, start);
      if (at == std::string_view::npos) break;
      parts.push_back(s.substr(start, at - start));
      start = at + d.size();
      ++n;
    }
    parts.push_back(s.substr(start));
  } else {
    size_t end = s.size();
    int64_t n = 0;
    std::vector<std::string_view> rev;
    while (maxsplit < 0 || n < maxsplit) {
      if (end < d.size()) break;
      size_t at = s.rfind(d, end - d.size());
      if (at == std::string_view::npos) break;
      rev.push_back(s.substr(at + d.size(), end - at - d.size()));
      end = at;
      ++n;
    }
    rev.push_back(s.substr(0, end));
    parts.assign(rev.rbegin(), rev.rend());
  }
  for (auto p : parts) out.push_back(piece(p));
  return out;
}

List py_splitlines(const Value& owner, bool keepends) {
  std::string_view s = owner.as_string();
  auto piece = [&](std::string_view p) { return Value::substring(owner, p); };
  List out;
  size_t start = 0, i = 0;
  while (i < s.size()) {
    size_t len;
    uint32_t cp = decode_utf8(s, i, &len);
    if (is_line_break(cp)) {
      size_t brk = len;
      if (cp == '\r' && i + 1 < s.size() && s[i + 1] == '\n') brk = 2;
      out.push_back(piece(s.substr(start, (keepends ? i + brk : i) - start)));
      i += brk;
      start = i;
    } else {
      i += len;
    }
  }
  if (start < s.size()) out.push_back(piece(s.substr(start)));
  return out;
}

std::string py_replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between every code point (and at both ends).
    int64_t n = 0;
    size_t i = 0;
    while (true) {
      if (count < 0 || n < count) { out += to; ++n; }
      if (i >= s.size()) break;
      size_t len;
      decode_utf8(s, i, &len);
      out += s.substr(i, len);
      i += len;
    }
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t at = s.find(from, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += to;
    start = at + from.size();
    ++n;
  }
  out += s.substr(start);
  return out;
}

std::string py_capitalize(std::string_view s) {
  if (s.empty()) return std::string();
  size_t len;
  decode_utf8(s, 0, &len);
  return map_case(s.substr(0, len), true) + map_case(s.substr(len), false);
}

// str.title(): a cased letter after an uncased character starts a word.
std::string py_title(std::string_view s) {
  std::string r;
  bool prev_cased = false;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t cp = decode_utf8(s, i, &len);
    bool cased = cp_cased(cp) || (cp < 0x80 && std::isalpha(static_cast<int>(cp)));
    if (cased) r += map_case(s.substr(i, len), !prev_cased);
    else r.append(s.substr(i, len));
    prev_cased = cased;
    i += len;
  }
  return r;
}

// jinja2's `title` filter: words begin after runs of -, whitespace, (, {, [, <.
std::string jinja_title(std::string_view s) {
  std::string r;
  bool at_start = true;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t cp = decode_utf8(s, i, &len);
    bool sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_py_space(cp);
    if (sep) {
      r.append(s.substr(i, len));
      at_start = true;
    } else {
      r += map_case(s.substr(i, len), at_start);
      at_start = false;
    }
    i += len;
  }
  return r;
}

Value str_value(const Value& v) {
  if (v.is_string()) return v;
  return Value::string(py_str(v));
}

// Arguments of a call: positional then keyword, by parameter name, as Python binds them.
struct Args {
  static constexpr size_t kMax = 5;
  std::array<Value, kMax> values;
  std::array<bool, kMax> given{};
  const Value& operator[](size_t i) const { return values[i]; }
  bool has(size_t i) const { return i < kMax && given[i]; }
};

Args bind_args(Evaluator& ev, const Expr& call, size_t first_positional, std::initializer_list<const char*> params,
               const char* what, std::vector<Value>* extra_positional = nullptr) {
  Args a;
  size_t n_pos = call.args.size() - first_positional;
  for (size_t i = 0; i < n_pos; ++i) {
    if (i >= params.size()) {
      if (extra_positional) {
        extra_positional->push_back(ev.eval(*call.args[first_positional + i]));
        continue;
      }
      ev.error(call, std::string(what) + " takes at most " + std::to_string(params.size()) + " argument(s) (" +
                         std::to_string(n_pos) + " given)");
    }
    a.values[i] = ev.eval(*call.args[first_positional + i]);
    a.given[i] = true;
  }
  for (const auto& [key, expr] : call.kwargs) {
    size_t i = 0;
    for (const char* p : params) {
      if (key == p) break;
      ++i;
    }
    if (i == params.size()) ev.error(call, std::string(what) + " got an unexpected keyword argument '" + key + "'");
    a.values[i] = ev.eval(*expr);
    a.given[i] = true;
  }
  return a;
}

int64_t int_arg(Evaluator& ev, const Expr& at, const Value& v, const char* what) {
  if (v.is_number() && v.kind() != Value::Kind::kFloat) return v.as_int();
  ev.error(at, std::string(what) + ": '" + std::string(v.type_name()) + "' object cannot be interpreted as an integer");
}

std::string_view str_arg(Evaluator& ev, const Expr& at, const Value& v, const char* what) {
  if (v.is_string()) return v.as_string();
  ev.error(at, std::string(what) + " argument must be str, not " + std::string(v.type_name()));
}

// Sorting key compare with jinja2's case-insensitive default (ignore_case lowercases strings).
bool sort_less(Evaluator& ev, const Expr& at, const Value& a, const Value& b, bool case_sensitive) {
  int c;
  if (!case_sensitive && a.is_string() && b.is_string()) {
    std::string x = lower_case(a.as_string()), y = lower_case(b.as_string());
    return x < y;
  }
  if (!py_compare(a, b, &c))
    ev.error(at, "'<' not supported between instances of '" + std::string(a.type_name()) + "' and '" +
                     std::string(b.type_name()) + "'");
  return c < 0;
}

// environment.getitem / getattr with a dotted attribute path ("a.b", "0").
Value attribute_path(Evaluator& ev, const Expr& at, const Value& v, std::string_view path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string_view part = path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (cur.is_undefined()) return cur;
    if (digits) cur = ev.get_item(cur, Value::integer(std::stoll(std::string(part))), at);
    else cur = ev.get_item(cur, Value::string(std::string(part)), at);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return cur;
}

}  // namespace

// ---- attribute and item access (jinja2's sandboxed getattr / getitem) ----

Value Evaluator::get_attr(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Value::Kind::kDict: {
      if (const Value* v = obj.as_dict().find(name)) return *v;
      return Value::missing(name, Value::Kind::kDict);
    }
    case Value::Kind::kNamespace: {
      if (Value* v = obj.as_namespace().find(name)) return *v;
      return Value::missing(name, Value::Kind::kNamespace);
    }
    case Value::Kind::kLoop: {
      const LoopState& l = obj.as_loop();
      if (name == "index") return Value::integer(static_cast<int64_t>(l.index + 1));
      if (name == "index0") return Value::integer(static_cast<int64_t>(l.index));
      if (name == "revindex") return Value::integer(static_cast<int64_t>(l.length - l.index));
      if (name == "revindex0") return Value::integer(static_cast<int64_t>(l.length - l.index - 1));
      if (name == "first") return Value::boolean(l.index == 0);
      if (name == "last") return Value::boolean(l.index + 1 == l.length);
      if (name == "length") return Value::integer(static_cast<int64_t>(l.length));
      if (name == "depth") return Value::integer(1);
      if (name == "depth0") return Value::integer(0);
      if (name == "previtem")
        return l.index > 0 ? (*l.items)[l.index - 1] : Value::undefined("there is no previous item");
      if (name == "nextitem")
        return l.index + 1 < l.length ? (*l.items)[l.index + 1] : Value::undefined("there is no next item");
      return Value::missing(name, Value::Kind::kLoop);
    }
    default: return Value::missing(name, obj.kind());
  }
}

Value Evaluator::get_item(const Value& obj, const Value& key, const Expr& at) {
  switch (obj.kind()) {
    case Value::Kind::kDict: {
      if (const Value* v = obj.as_dict().find(key)) return *v;
      if (key.is_string()) return Value::missing(key.as_string(), Value::Kind::kDict);
      return Value::undefined("'dict object' has no attribute " + [&] { std::string s; py_repr(key, s); return s; }());
    }
    case Value::Kind::kList: {
      if (key.is_number() && key.kind() != Value::Kind::kFloat) {
        const List& l = obj.as_list();
        int64_t i = key.as_int();
        if (i < 0) i += static_cast<int64_t>(l.size());
        if (i >= 0 && i < static_cast<int64_t>(l.size())) return l[i];
        return Value::undefined("'list object' has no element " + py_str(key));
      }
      if (key.is_string()) return Value::missing(key.as_string(), Value::Kind::kList);
      return Value::undefined("'list object' has no element " + py_str(key));
    }
    case Value::Kind::kString: {
      if (key.is_number() && key.kind() != Value::Kind::kFloat) {
        std::string_view s = obj.as_string();
        std::vector<size_t> starts;
        for (size_t i = 0; i < s.size();) {
          starts.push_back(i);
          size_t len;
          decode_utf8(s, i, &len);
          i += len;
        }
        int64_t i = key.as_int();
        if (i < 0) i += static_cast<int64_t>(starts.size());
        if (i >= 0 && i < static_cast<int64_t>(starts.size())) {
          size_t end = static_cast<size_t>(i) + 1 < starts.size() ? starts[i + 1] : s.size();
          return Value::string(std::string(s.substr(starts[i], end - starts[i])));
        }
        return Value::undefined("'str object' has no element " + py_str(key));
      }
      if (key.is_string()) return Value::missing(key.as_string(), Value::Kind::kString);
      return Value::undefined("'str object' has no element " + py_str(key));
    }
    case Value::Kind::kNamespace:
    case Value::Kind::kLoop:
      if (key.is_string()) return get_attr(obj, key.as_string());
      return Value::undefined("no element " + py_str(key));
    default:
      if (key.is_string()) return Value::missing(key.as_string(), obj.kind());
      return Value::undefined("'" + std::string(obj.type_name()) + " object' has no element " + py_str(key));
  }
}

std::shared_ptr<const List> Evaluator::iterate(const Value& v, const Expr& at) {
  switch (v.kind()) {
    case Value::Kind::kList: return std::shared_ptr<const List>(std::shared_ptr<const List>{}, &v.as_list());
    case Value::Kind::kGenerator: {  // one pass: what is left, then nothing
      Generator& g = v.as_generator();
      if (g.error) throw *g.error;
      auto rest = std::make_shared<const List>(g.items.begin() + static_cast<std::ptrdiff_t>(g.cursor), g.items.end());
      g.cursor = g.items.size();
      return rest;
    }
    case Value::Kind::kUndefined: return std::make_shared<const List>();
    case Value::Kind::kDict: {
      List keys;
      for (const auto& [k, item] : v.as_dict().items) keys.push_back(k);
      return std::make_shared<const List>(std::move(keys));
    }
    case Value::Kind::kString: {
      List chars;
      std::string_view s = v.as_string();
      for (size_t i = 0; i < s.size();) {
        size_t len;
        decode_utf8(s, i, &len);
        chars.push_back(Value::string(std::string(s.substr(i, len))));
        i += len;
      }
      return std::make_shared<const List>(std::move(chars));
    }
    default: error(at, "'" + std::string(v.type_name()) + "' object is not iterable");
  }
}

// ---- filters ----

// A generator filter's work: its result, or the error it meets, kept for when the generator is consumed.
Value Evaluator::lazy(const std::function<List()>& work) {
  try {
    return Value::generator(work());
  } catch (const Error& err) {
    Value g = Value::generator(List{});
    g.as_generator().error = std::make_shared<Error>(err);
    return g;
  }
}

Value Evaluator::to_int(const Expr& at, double d) {
  if (std::isnan(d)) error(at, "cannot convert float NaN to integer");
  if (!(d > -9.2e18 && d < 9.2e18)) error(at, "integer beyond 64 bits (Python's integers are unbounded)", Error::Kind::kUnsupported);
  return Value::integer(static_cast<int64_t>(d));
}

Value Evaluator::call_filter(const Expr& e, const Value& input) {
  auto f = static_cast<Filter>(e.slot);
  auto args = [&](std::initializer_list<const char*> params) { return bind_args(*this, e, 1, params, e.name.c_str()); };
  auto length_of = [&](const Value& v) -> int64_t {
    switch (v.kind()) {
      case Value::Kind::kString: return static_cast<int64_t>(cp_count(v.as_string()));
      case Value::Kind::kList: return static_cast<int64_t>(v.as_list().size());
      case Value::Kind::kDict: return static_cast<int64_t>(v.as_dict().items.size());
      case Value::Kind::kUndefined: return 0;
      default: error(e, "object of type '" + std::string(v.type_name()) + "' has no len()");
    }
  };
  switch (f) {
    case Filter::kLength: case Filter::kCount: case Filter::kUpper: case Filter::kLower: case Filter::kCapitalize:
    case Filter::kTitle: case Filter::kString: case Filter::kSafe: case Filter::kFirst: case Filter::kLast:
    case Filter::kList: case Filter::kReverse: case Filter::kItems: case Filter::kAbs: case Filter::kWordcount:
      args({});  // these take no arguments: jinja2 raises a TypeError for any
      break;
    default: break;
  }
  switch (f) {  // filters that take str() of their input: a generator's str() is its address
    case Filter::kTrim: case Filter::kUpper: case Filter::kLower: case Filter::kTitle: case Filter::kCapitalize:
    case Filter::kReplace: case Filter::kIndent: case Filter::kCenter: case Filter::kWordcount: case Filter::kString:
      if (input.kind() == Value::Kind::kGenerator)
        error(e, "the str() of a " + std::string(input.type_name()) + " (jinja2 prints its address; add |list)",
              Error::Kind::kUnsupported);
      break;
    default: break;
  }
  switch (f) {
    case Filter::kTrim: {
      Args a = args({"chars"});
      Value s = str_value(input);
      return Value::substring(s, py_strip(s.as_string(), a.has(0) ? &a[0] : nullptr, true, true));
    }
    case Filter::kLength:
    case Filter::kCount: return Value::integer(length_of(input));
    case Filter::kUpper: return Value::string(upper_case(py_str(input)));
    case Filter::kLower: return Value::string(lower_case(py_str(input)));
    case Filter::kCapitalize: return Value::string(py_capitalize(py_str(input)));
    case Filter::kTitle: return Value::string(jinja_title(py_str(input)));
    case Filter::kString:
      if (input.kind() == Value::Kind::kGenerator)
        error(e, "printing a " + std::string(input.type_name()) + " (jinja2 prints its address; add |list)", Error::Kind::kUnsupported);
      return str_value(input);
    case Filter::kSafe: return input;
    case Filter::kReplace: {
      Args a = args({"old", "new", "count"});
      if (!a.has(0) || !a.has(1)) error(e, "replace() needs the old and new strings");
      std::string s = py_str(input);
      int64_t count = a.has(2) && !a[2].is_none() ? int_arg(*this, e, a[2], "replace") : -1;
      return Value::string(py_replace(s, py_str(a[0]), py_str(a[1]), count));
    }
    case Filter::kD:
    case Filter::kDefault: {
      Args a = args({"default_value", "boolean"});
      Value def = a.has(0) ? a[0] : Value::view("");
      bool boolean = a.has(1) && a[1].truthy();
      if (input.is_undefined() || (boolean && !input.truthy())) return def;
      return input;
    }
    case Filter::kJoin: {
      Args a = args({"d", "attribute"});
      std::string sep = a.has(0) ? py_str(a[0]) : "";
      auto items = iterate(input, e);
      std::string out;
      bool first = true;
      for (const Value& item : *items) {
        if (!first) out += sep;
        first = false;
        Value v = a.has(1) && !a[1].is_none() ? attribute_path(*this, e, item, py_str(a[1])) : item;
        py_str(v, out);
      }
      return Value::string(std::move(out));
    }
    case Filter::kFirst: {
      if (input.kind() == Value::Kind::kGenerator) {  // next(): takes one item
        Generator& g = input.as_generator();
        if (g.error) throw *g.error;
        if (g.cursor >= g.items.size()) return Value::undefined("No first item, sequence was empty.");
        return g.items[g.cursor++];
      }
      auto items = iterate(input, e);
      if (items->empty()) return Value::undefined("No first item, sequence was empty.");
      return items->front();
    }
    case Filter::kLast: {
      if (input.kind() == Value::Kind::kGenerator)
        error(e, "'" + std::string(input.type_name()) + "' object is not reversible");
      auto items = iterate(input, e);
      if (items->empty()) return Value::undefined("No last item, sequence was empty.");
      return items->back();
    }
    case Filter::kList: return Value::list(*iterate(input, e));
    case Filter::kReverse: {
      if (input.is_string()) {
        auto items = iterate(input, e);
        std::string out;
        for (auto it = items->rbegin(); it != items->rend(); ++it) out += it->as_string();
        return Value::string(std::move(out));
      }
      // reversed(): an iterator over a list's items or a dict's keys; a generator is first made a list.
      bool iterator = input.is_list() || input.is_dict();
      auto items = iterate(input, e);
      List reversed(items->rbegin(), items->rend());
      if (!iterator) return Value::list(std::move(reversed));
      return Value::generator(std::move(reversed), input.is_dict() ? "dict_reversekeyiterator" : "list_reverseiterator");
    }
    case Filter::kItems: return lazy([&] {
      List out;
      if (input.is_undefined()) return out;
      if (!input.is_dict()) error(e, "Can only get item pairs from a mapping.");
      for (const auto& [k, v] : input.as_dict().items) out.push_back(Value::tuple(List{k, v}));
      return out;
    });
    case Filter::kDictsort: {
      Args a = args({"case_sensitive", "by", "reverse"});
      if (!input.is_dict()) error(e, "dictsort needs a mapping");
      bool cs = a.has(0) && a[0].truthy();
      int pos = 0;
      if (a.has(1)) {
        std::string by = py_str(a[1]);
        if (by == "value") pos = 1;
        else if (by != "key") error(e, "You can only sort by either \"key\" or \"value\"");
      }
      std::vector<std::pair<Value, Value>> items = input.as_dict().items;
      std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
        return sort_less(*this, e, pos ? x.second : x.first, pos ? y.second : y.first, cs);
      });
      if (a.has(2) && a[2].truthy()) std::reverse(items.begin(), items.end());
      List out;
      for (auto& [k, v] : items) out.push_back(Value::tuple(List{k, v}));
      return Value::list(std::move(out));
    }
    case Filter::kSort: {
      Args a = args({"reverse", "case_sensitive", "attribute"});
      auto items = iterate(input, e);
      List out = *items;
      bool cs = a.has(1) && a[1].truthy();
      std::string attr = a.has(2) && !a[2].is_none() ? py_str(a[2]) : "";
      auto key = [&](const Value& v) { return attr.empty() ? v : attribute_path(*this, e, v, attr); };
      std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) { return sort_less(*this, e, key(x), key(y), cs); });
      if (a.has(0) && a[0].truthy()) {
        // Python's sort(reverse=True) keeps equal items in their order: sort descending, stably.
        out = *items;
        std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) { return sort_less(*this, e, key(y), key(x), cs); });
      }
      return Value::list(std::move(out));
    }
    case Filter::kUnique: return lazy([&] {
      Args a = args({"case_sensitive", "attribute"});
      auto items = iterate(input, e);
      bool cs = a.has(0) && a[0].truthy();
      std::string attr = a.has(1) && !a[1].is_none() ? py_str(a[1]) : "";
      List out;
      std::vector<Value> seen;
      for (const Value& v : *items) {
        Value k = attr.empty() ? v : attribute_path(*this, e, v, attr);
        if (!cs && k.is_string()) k = Value::string(lower_case(k.as_string()));
        bool dup = false;
        for (const Value& s : seen)
          if (py_equal(s, k)) { dup = true; break; }
        if (!dup) {
          seen.push_back(k);
          out.push_back(v);
        }
      }
      return out;
    });
    case Filter::kMap: {
      // The arguments now; the work when the generator is consumed (jinja2's generators fail late).
      if (!e.kwargs.empty() && e.kwargs[0].first == "attribute") {
        Args a = args({"attribute", "default"});
        return lazy([&] {
          List out;
          if (!input.truthy()) return out;
          std::string attr = py_str(a[0]);
          auto items = iterate(input, e);  // kept alive for the loop
          for (const Value& v : *items) {
            Value r = attribute_path(*this, e, v, attr);
            if (r.is_undefined() && a.has(1)) r = a[1];
            out.push_back(r);
          }
          return out;
        });
      }
      std::vector<Value> rest;
      for (size_t i = 1; i < e.args.size(); ++i) rest.push_back(eval(*e.args[i]));
      return lazy([&] {
        List out;
        if (!input.truthy()) return out;
        if (rest.empty()) error(e, "map requires a filter argument");
        Value name = rest[0];
        std::vector<Value> more(rest.begin() + 1, rest.end());
        auto items = iterate(input, e);  // kept alive for the loop
        for (const Value& v : *items) out.push_back(call_filter_named(e, py_str(name), v, more));
        return out;
      });
    }
    case Filter::kSelect:
    case Filter::kReject:
    case Filter::kSelectattr:
    case Filter::kRejectattr: {
      bool by_attr = f == Filter::kSelectattr || f == Filter::kRejectattr;
      bool want = f == Filter::kSelect || f == Filter::kSelectattr;
      std::vector<Value> given;
      for (size_t i = 1; i < e.args.size(); ++i) given.push_back(eval(*e.args[i]));
      return lazy([&] {
        List out;
        if (!input.truthy()) return out;
        size_t i = 0;
        std::string attr;
        if (by_attr) {
          if (given.empty()) error(e, "Missing parameter for attribute name");
          attr = py_str(given[0]);
          i = 1;
        }
        int test = -1;
        std::vector<Value> targs;
        if (i < given.size()) {
          std::string tname = py_str(given[i]);
          test = find_test(tname);
          if (test < 0) error(e, "No test named '" + tname + "'.");
          targs.assign(given.begin() + static_cast<std::ptrdiff_t>(i) + 1, given.end());
        }
        auto items = iterate(input, e);  // kept alive for the loop
        for (const Value& v : *items) {
          Value x = by_attr ? attribute_path(*this, e, v, attr) : v;
          bool r = test < 0 ? x.truthy() : call_test(e, test, x, targs);
          if (r == want) out.push_back(v);
        }
        return out;
      });
    }
    case Filter::kTojson: {
      // transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
      Args a = args({"ensure_ascii", "indent", "separators", "sort_keys"});
      JsonDumpOptions o;
      o.ensure_ascii = a.has(0) && a[0].truthy();
      if (a.has(1) && !a[1].is_none()) {
        if (a[1].is_string()) o.indent_str = std::string(a[1].as_string());
        else o.indent = static_cast<int>(std::max<int64_t>(0, int_arg(*this, e, a[1], "indent")));
        o.item_separator = ",";
        if (a[1].is_string() && o.indent_str.empty()) o.indent = 0;
      }
      if (a.has(2) && !a[2].is_none()) {
        auto seps = iterate(a[2], e);
        if (seps->size() != 2) error(e, "separators must be a pair of strings");
        o.item_separator = py_str((*seps)[0]);
        o.key_separator = py_str((*seps)[1]);
      }
      o.sort_keys = a.has(3) && a[3].truthy();
      std::string out, bad;
      if (!json_dumps(input, o, out, &bad)) error(e, bad);
      return Value::string(std::move(out));
    }
    case Filter::kInt: {
      require_defined(input, e);  // int(Undefined) raises
      Args a = args({"default", "base"});
      Value def = a.has(0) ? a[0] : Value::integer(0);
      if (input.kind() == Value::Kind::kFloat) {
        double d = input.as_float();
        if (std::isnan(d) || std::isinf(d)) return def;
        return to_int(e, d);
      }
      if (input.is_number()) return Value::integer(input.as_int());
      if (input.is_string()) {
        std::string s(py_strip(input.as_string(), nullptr, true, true));
        std::string digits;
        for (char c : s) if (c != '_') digits += c;
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(digits.c_str(), &end, a.has(1) ? static_cast<int>(int_arg(*this, e, a[1], "base")) : 10);
        if (!digits.empty() && end && *end == 0 && errno == 0) return Value::integer(v);
        if (errno == ERANGE) error(e, "integer beyond 64 bits (Python's integers are unbounded)", Error::Kind::kUnsupported);
        double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end && *end == 0 && std::isfinite(d)) return to_int(e, d);
      }
      return def;
    }
    case Filter::kFloat: {
      require_defined(input, e);
      Args a = args({"default"});
      Value def = a.has(0) ? a[0] : Value::number(0.0);
      if (input.is_number()) return Value::number(input.as_float());
      if (input.is_string()) {
        std::string s(py_strip(input.as_string(), nullptr, true, true));
        char* end = nullptr;
        double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end && *end == 0) return Value::number(d);
      }
      return def;
    }
    case Filter::kAbs:
      if (input.kind() == Value::Kind::kFloat) return Value::number(std::fabs(input.as_float()));
      if (input.is_number()) {
        if (input.as_int() == INT64_MIN) checked(e, true, 0);
        return Value::integer(input.as_int() < 0 ? -input.as_int() : input.as_int());
      }
      error(e, "bad operand type for abs(): '" + std::string(input.type_name()) + "'");
    case Filter::kRound: {
      Args a = args({"precision", "method"});
      int64_t precision = a.has(0) ? int_arg(*this, e, a[0], "round") : 0;
      std::string method = a.has(1) ? py_str(a[1]) : "common";
      if (!input.is_number()) error(e, "type " + std::string(input.type_name()) + " doesn't define __round__ method");
      double x = input.as_float(), m = std::pow(10.0, static_cast<double>(precision));
      double r;
      if (method == "common") {
        // Python's round(): half to even.
        double scaled = x * m;
        r = std::nearbyint(scaled) / m;
      } else if (method == "ceil") {
        r = std::ceil(x * m) / m;
      } else if (method == "floor") {
        r = std::floor(x * m) / m;
      } else {
        error(e, "method must be common, ceil or floor");
      }
      if (method == "common" && input.kind() != Value::Kind::kFloat) return input.kind() == Value::Kind::kBool ? Value::integer(input.as_int()) : input;
      return Value::number(r);
    }
    case Filter::kIndent: {
      Args a = args({"width", "first", "blank"});
      // jinja2 appends "\n" to its input first: anything but a string fails there.
      if (!input.is_string()) {
        require_defined(input, e);
        error(e, "unsupported operand type(s) for +=: '" + std::string(input.type_name()) + "' and 'str'");
      }
      std::string ind = a.has(0) && a[0].is_string() ? std::string(a[0].as_string())
                                                     : std::string(a.has(0) ? static_cast<size_t>(std::max<int64_t>(0, int_arg(*this, e, a[0], "indent"))) : 4, ' ');
      bool first = a.has(1) && a[1].truthy();
      bool blank = a.has(2) && a[2].truthy();
      Value s = Value::string(py_str(input) + "\n");
      List lines = py_splitlines(s, false);
      std::string rv;
      if (blank) {
        for (size_t i = 0; i < lines.size(); ++i) {
          if (i) rv += "\n" + ind;
          rv += lines[i].as_string();
        }
      } else {
        rv = std::string(lines.empty() ? "" : lines[0].as_string());
        for (size_t i = 1; i < lines.size(); ++i) {
          rv += "\n";
          if (!lines[i].as_string().empty()) rv += ind;
          rv += lines[i].as_string();
        }
      }
      if (first) rv = ind + rv;
      return Value::string(std::move(rv));
    }
    case Filter::kCenter: {
      Args a = args({"width"});
      int64_t width = a.has(0) ? int_arg(*this, e, a[0], "center") : 80;
      std::string s = py_str(input);
      int64_t len = static_cast<int64_t>(cp_count(s));
      if (width <= len) return Value::string(s);
      int64_t total = width - len;
      int64_t left = total / 2 + (total & width & 1);
      return Value::string(std::string(left, ' ') + s + std::string(total - left, ' '));
    }
    case Filter::kWordcount: {
      std::string s = py_str(input);
      int64_t n = 0;
      bool in_word = false;
      for (unsigned char c : s) {
        bool w = std::isalnum(c) || c == '_' || c >= 0x80;
        if (w && !in_word) ++n;
        in_word = w;
      }
      return Value::integer(n);
    }
    case Filter::kBatch: return lazy([&] {
      Args a = args({"linecount", "fill_with"});
      int64_t n = int_arg(*this, e, a[0], "batch");
      if (n <= 0) error(e, "batch size must be positive");
      auto items = iterate(input, e);
      List out, cur;
      for (const Value& v : *items) {
        cur.push_back(v);
        if (static_cast<int64_t>(cur.size()) == n) { out.push_back(Value::list(std::move(cur))); cur.clear(); }
      }
      if (!cur.empty()) {
        if (a.has(1)) while (static_cast<int64_t>(cur.size()) < n) cur.push_back(a[1]);
        out.push_back(Value::list(std::move(cur)));
      }
      return out;
    });
    case Filter::kSum: {
      Args a = args({"attribute", "start"});
      Value total = a.has(1) ? a[1] : Value::integer(0);
      auto items = iterate(input, e);
      for (const Value& v : *items) {
        Value x = a.has(0) && !a[0].is_none() ? attribute_path(*this, e, v, py_str(a[0])) : v;
        if (!x.is_number() || !total.is_number()) error(e, "unsupported operand type(s) for +: '" + std::string(total.type_name()) + "' and '" + std::string(x.type_name()) + "'");
        if (x.kind() == Value::Kind::kFloat || total.kind() == Value::Kind::kFloat) total = Value::number(total.as_float() + x.as_float());
        else total = checked_add(e, total.as_int(), x.as_int());
      }
      return total;
    }
    case Filter::kMin:
    case Filter::kMax: {
      Args a = args({"case_sensitive", "attribute"});
      bool cs = a.has(0) && a[0].truthy();
      auto items = iterate(input, e);
      if (items->empty()) return Value::undefined("No aggregated item, sequence was empty.");
      std::string attr = a.has(1) && !a[1].is_none() ? py_str(a[1]) : "";
      auto key = [&](const Value& v) { return attr.empty() ? v : attribute_path(*this, e, v, attr); };
      const Value* best = &(*items)[0];
      for (const Value& v : *items) {
        bool better = f == Filter::kMin ? sort_less(*this, e, key(v), key(*best), cs) : sort_less(*this, e, key(*best), key(v), cs);
        if (better) best = &v;
      }
      return *best;
    }
    case Filter::kAttr: {
      // environment.getattr: Python attributes only (a dict's keys are not attributes).
      Args a = args({"name"});
      require_defined(input, e);
      if (input.is_dict()) return Value::missing("", Value::Kind::kDict);
      return get_attr(input, py_str(a[0]));
    }
    default: break;
  }
  error(e, "the '" + e.name + "' filter", Error::Kind::kUnsupported);
}

Value Evaluator::call_filter_named(const Expr& at, std::string_view name, const Value& input, const std::vector<Value>& args) {
  // map('filter', ...): a synthetic call whose arguments are literals.
  int id = find_filter(name);
  if (id < 0) error(at, "No filter named '" + std::string(name) + "'.");
  Expr call;
  call.kind = Expr::Kind::kFilter;
  call.line = at.line;
  call.column = at.column;
  call.name = std::string(name);
  call.slot = id;
  call.args.push_back(nullptr);
  for (const Value& v : args) {
    auto lit = std::make_unique<Expr>();
    lit->kind = Expr::Kind::kLiteral;
    lit->literal = v;
    call.args.push_back(std::move(lit));
  }
  if (filter_unsupported(static_cast<Filter>(id))) error(at, "the '" + std::string(name) + "' filter", Error::Kind::kUnsupported);
  return call_filter(call, input);
}

// ---- tests ----

bool Evaluator::call_test(const Expr& at, int test, const Value& v, const std::vector<Value>& args) {
  using K = Value::Kind;
  auto arg = [&](size_t i) -> const Value& {
    if (i >= args.size()) error(at, "the test '" + at.name + "' needs an argument");
    return args[i];
  };
  auto ordered = [&](int want_sign, bool or_equal) {
    int c;
    require_defined(v, at);
    if (!py_compare(v, arg(0), &c))
      error(at, "'<' not supported between instances of '" + std::string(v.type_name()) + "' and '" + std::string(arg(0).type_name()) + "'");
    return c == want_sign || (or_equal && c == 0);
  };
  switch (static_cast<Test>(test)) {
    case Test::kDefined: return !v.is_undefined();
    case Test::kUndefined: return v.is_undefined();
    case Test::kNone: return v.is_none();
    case Test::kBoolean: return v.kind() == K::kBool;
    case Test::kTrue: return v.kind() == K::kBool && v.as_bool();
    case Test::kFalse: return v.kind() == K::kBool && !v.as_bool();
    case Test::kString: return v.is_string();
    case Test::kNumber: return v.is_number();
    case Test::kInteger: return v.kind() == K::kInt;
    case Test::kFloat: return v.kind() == K::kFloat;
    case Test::kMapping: return v.is_dict();
    case Test::kSequence: return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
    case Test::kIterable:
      return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() || v.kind() == K::kGenerator;
    case Test::kCallable: return v.kind() == K::kCallable;
    case Test::kEscaped: return false;
    case Test::kEq: case Test::kEqualto: return py_equal(v, arg(0));
    case Test::kNe: return !py_equal(v, arg(0));
    case Test::kLt: case Test::kLessthan: return ordered(-1, false);
    case Test::kLe: return ordered(-1, true);
    case Test::kGt: case Test::kGreaterthan: return ordered(1, false);
    case Test::kGe: return ordered(1, true);
    case Test::kIn: return value_in(*this, at, v, arg(0));
    case Test::kSameas:
      if (v.is_none() || v.kind() == K::kBool || v.is_undefined()) return v.kind() == arg(0).kind() && py_equal(v, arg(0));
      if (v.is_list() || v.is_dict()) return v.kind() == arg(0).kind() && (v.is_list() ? &v.as_list() == &arg(0).as_list() : &v.as_dict() == &arg(0).as_dict());
      return v.kind() == arg(0).kind() && py_equal(v, arg(0));
    case Test::kOdd:
    case Test::kEven:
    case Test::kDivisibleby: {
      require_defined(v, at);
      if (!v.is_number()) error(at, "unsupported operand type(s) for %: '" + std::string(v.type_name()) + "' and 'int'");
      // Python: value % 2 == 1 (odd), value % 2 == 0 (even), value % num == 0, with Python's modulo sign.
      double d = static_cast<Test>(test) == Test::kDivisibleby ? arg(0).as_float() : 2.0;
      if (d == 0) error(at, "integer division or modulo by zero");
      double r = std::fmod(v.as_float(), d);
      if (r != 0 && ((r < 0) != (d < 0))) r += d;
      if (static_cast<Test>(test) == Test::kOdd) return r == 1;
      return r == 0;
    }
    case Test::kLower:
    case Test::kUpper: {
      std::string s = py_str(v);
      return static_cast<Test>(test) == Test::kLower ? (lower_case(s) == s && upper_case(s) != s)
                                                     : (upper_case(s) == s && lower_case(s) != s);
    }
    case Test::kFilter: return v.is_string() && find_filter(v.as_string()) >= 0;
    case Test::kTest: return v.is_string() && find_test(v.as_string()) >= 0;
    default: break;
  }
  error(at, "the '" + at.name + "' test", Error::Kind::kUnsupported);
}

// ---- methods ----

Value Evaluator::call_method(const Expr& call, const Value& obj, const std::string& m) {
  using M = Method;
  const auto id = static_cast<Method>(call.slot);
  auto args = [&](std::initializer_list<const char*> params) {
    return bind_args(*this, call, 1, params, m.c_str());
  };
  if (obj.is_string()) {
    std::string_view s = obj.as_string();
    if (id == M::k_startswith || id == M::k_endswith) {
      Args a = args({"prefix", "start", "end"});
      if (a.has(1) || a.has(2)) error(call, "start / end arguments of str." + m, Error::Kind::kUnsupported);
      auto test = [&](std::string_view p) {
        return id == M::k_startswith ? s.substr(0, p.size()) == p : (s.size() >= p.size() && s.substr(s.size() - p.size()) == p);
      };
      if (a[0].is_list()) {
        for (const Value& p : a[0].as_list())
          if (test(str_arg(*this, call, p, m.c_str()))) return Value::boolean(true);
        return Value::boolean(false);
      }
      if (!a[0].is_string()) error(call, m + " first arg must be str or a tuple of str, not " + std::string(a[0].type_name()));
      return Value::boolean(test(a[0].as_string()));
    }
    if (id == M::k_strip || id == M::k_lstrip || id == M::k_rstrip) {
      Args a = args({"chars"});
      if (a.has(0) && !a[0].is_none() && !a[0].is_string()) error(call, m + " arg must be None or str");
      return Value::substring(obj, py_strip(s, a.has(0) ? &a[0] : nullptr, id != M::k_rstrip, id != M::k_lstrip));
    }
    if (id == M::k_split || id == M::k_rsplit) {
      Args a = args({"sep", "maxsplit"});
      if (a.has(0) && a[0].is_string() && a[0].as_string().empty()) error(call, "empty separator");
      if (a.has(0) && !a[0].is_none() && !a[0].is_string()) error(call, "must be str or None, not " + std::string(a[0].type_name()));
      int64_t maxsplit = a.has(1) ? int_arg(*this, call, a[1], m.c_str()) : -1;
      return Value::list(py_split(obj, a.has(0) ? &a[0] : nullptr, maxsplit, id == M::k_rsplit));
    }
    if (id == M::k_splitlines) {
      Args a = args({"keepends"});
      return Value::list(py_splitlines(obj, a.has(0) && a[0].truthy()));
    }
    if (id == M::k_upper) { args({}); return Value::string(upper_case(s)); }
    if (id == M::k_lower) { args({}); return Value::string(lower_case(s)); }
    if (id == M::k_title) { args({}); return Value::string(py_title(s)); }
    if (id == M::k_capitalize) { args({}); return Value::string(py_capitalize(s)); }
    if (id == M::k_replace) {
      Args a = args({"old", "new", "count"});
      int64_t count = a.has(2) ? int_arg(*this, call, a[2], "replace") : -1;
      return Value::string(py_replace(s, str_arg(*this, call, a[0], "replace()"), str_arg(*this, call, a[1], "replace()"), count));
    }
    if (id == M::k_find || id == M::k_rfind || id == M::k_index || id == M::k_rindex || id == M::k_count) {
      Args a = args({"sub", "start", "end"});
      if (a.has(1) || a.has(2)) error(call, "start / end arguments of str." + m, Error::Kind::kUnsupported);
      std::string_view sub = str_arg(*this, call, a[0], m.c_str());
      if (id == M::k_count) {
        if (sub.empty()) return Value::integer(static_cast<int64_t>(cp_count(s) + 1));
        int64_t n = 0;
        for (size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) ++n;
        return Value::integer(n);
      }
      size_t at = (id == M::k_rfind || id == M::k_rindex) ? s.rfind(sub) : s.find(sub);
      if (at == std::string_view::npos) {
        if (id == M::k_index || id == M::k_rindex) error(call, "substring not found");
        return Value::integer(-1);
      }
      return Value::integer(static_cast<int64_t>(cp_count(s.substr(0, at))));
    }
    if (id == M::k_join) {
      Args a = args({"iterable"});
      auto items = iterate(a[0], call);
      std::string out;
      bool first = true;
      for (const Value& v : *items) {
        if (!v.is_string()) error(call, "sequence item: expected str instance, " + std::string(v.type_name()) + " found");
        if (!first) out += s;
        first = false;
        out += v.as_string();
      }
      return Value::string(std::move(out));
    }
    if (id == M::k_isdigit || id == M::k_isalpha || id == M::k_isalnum || id == M::k_isspace || id == M::k_islower || id == M::k_isupper) {
      args({});
      if (s.empty()) return Value::boolean(false);
      if (id == M::k_isspace) {
        for (size_t i = 0; i < s.size();) {
          size_t n = py_space_at(s, i);
          if (!n) return Value::boolean(false);
          i += n;
        }
        return Value::boolean(true);
      }
      if (id == M::k_islower) return Value::boolean(lower_case(s) == s && upper_case(s) != s);
      if (id == M::k_isupper) return Value::boolean(upper_case(s) == s && lower_case(s) != s);
      for (unsigned char c : s) {
        bool ok = id == M::k_isdigit ? std::isdigit(c) : id == M::k_isalpha ? std::isalpha(c) : std::isalnum(c);
        if (!ok) return Value::boolean(false);
      }
      return Value::boolean(true);
    }
    static const char* const kStrMethods[] = {
        "casefold", "center", "encode", "expandtabs", "format", "format_map", "index", "isascii", "isdecimal",
        "isidentifier", "isnumeric", "isprintable", "istitle", "ljust", "maketrans", "partition", "removeprefix",
        "removesuffix", "rindex", "rjust", "rpartition", "swapcase", "translate", "zfill"};
    for (const char* known : kStrMethods)
      if (m == known) error(call, "the string method '" + m + "'", Error::Kind::kUnsupported);
    error(call, "'str object' has no attribute '" + m + "'");
  }
  if (obj.is_dict()) {
    const Dict& d = obj.as_dict();
    if (id == M::k_items) {
      args({});
      List out;
      out.reserve(d.items.size());
      for (const auto& [k, v] : d.items) out.push_back(Value::tuple(List{k, v}));
      return Value::list(std::move(out));
    }
    if (id == M::k_keys || id == M::k_values) {
      args({});
      List out;
      for (const auto& [k, v] : d.items) out.push_back(id == M::k_keys ? k : v);
      return Value::list(std::move(out));
    }
    if (id == M::k_get) {
      Args a = args({"key", "default"});
      if (const Value* v = d.find(a[0])) return *v;
      return a.has(1) ? a[1] : Value::none();
    }
    if (id == M::k_copy) { args({}); return obj; }
    error(call, "access to attribute '" + m + "' of 'dict' object is unsafe.");
  }
  if (obj.is_list()) {
    const List& l = obj.as_list();
    if (id == M::k_index || id == M::k_count) {
      Args a = args({"value"});
      int64_t n = 0;
      for (size_t i = 0; i < l.size(); ++i) {
        if (!py_equal(l[i], a[0])) continue;
        if (id == M::k_index) return Value::integer(static_cast<int64_t>(i));
        ++n;
      }
      if (id == M::k_index) error(call, "value is not in list");
      return Value::integer(n);
    }
    if (id == M::k_copy) { args({}); return obj; }
    if (id == M::k_append || id == M::k_extend || id == M::k_insert || id == M::k_pop || id == M::k_remove || id == M::k_reverse ||
        id == M::k_sort || id == M::k_clear)
      error(call, "access to attribute '" + m + "' of 'list' object is unsafe.");
    error(call, "'list object' has no attribute '" + m + "'");
  }
  if (obj.kind() == Value::Kind::kLoop && id == M::k_cycle) {
    if (call.args.size() < 2) error(call, "no items for cycling given");
    size_t n = call.args.size() - 1;
    return eval(*call.args[1 + obj.as_loop().index % n]);
  }
  if (obj.kind() == Value::Kind::kNamespace) {
    Value v = get_attr(obj, m);
    if (v.kind() == Value::Kind::kCallable) return call_macro(call, v.as_callable());
    require_defined(v, call);
  }
  Value missing = get_attr(obj, m);
  if (missing.is_undefined()) error(call, missing.undefined_message());
  error(call, "'" + std::string(missing.type_name()) + "' object is not callable");
}

// ---- printf-style formatting: 'text %s %d' % args ----

Value Evaluator::format_percent(const Expr& at, std::string_view fmt, const Value& args) {
  // A tuple supplies the arguments one by one; anything else (a list too) is the single argument.
  List single;
  const List* items = nullptr;
  if (args.is_tuple()) {
    items = &args.as_list();
  } else {
    single.push_back(args);
    items = &single;
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    size_t start = i++;
    if (i < fmt.size() && fmt[i] == '(') error(at, "%(name)s formatting", Error::Kind::kUnsupported);
    bool left = false, zero = false, plus = false, space = false;
    for (; i < fmt.size() && std::strchr("-0+ #", fmt[i]); ++i) {
      left |= fmt[i] == '-';
      zero |= fmt[i] == '0';
      plus |= fmt[i] == '+';
      space |= fmt[i] == ' ';
    }
    auto number = [&](int* out_n) {
      if (i < fmt.size() && fmt[i] == '*') error(at, "'*' widths in % formatting", Error::Kind::kUnsupported);
      bool any = false;
      int n = 0;
      for (; i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])); ++i) {
        n = n * 10 + (fmt[i] - '0');
        any = true;
        if (n > 100000) error(at, "a % format width or precision above 100000", Error::Kind::kUnsupported);
      }
      if (any) *out_n = n;
      return any;
    };
    int width = 0, precision = -1;
    number(&width);
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      precision = 0;
      number(&precision);
    }
    if (i >= fmt.size()) error(at, "incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!std::strchr("srdiufFeExXo", conv)) {
      char b[96];
      std::snprintf(b, sizeof b, "unsupported format character '%c' (0x%x) at index %zu", conv,
                    static_cast<unsigned char>(conv), i);
      error(at, b);
    }
    if (next >= items->size()) error(at, "not enough arguments for format string");
    const Value& v = (*items)[next++];
    std::string body;
    bool numeric = conv != 's' && conv != 'r';
    if (conv == 's') {
      body = py_str(v);
      if (precision >= 0 && cp_count(body) > static_cast<size_t>(precision)) {
        size_t cut = 0;
        for (int k = 0; k < precision; ++k) {
          size_t len;
          decode_utf8(body, cut, &len);
          cut += len;
        }
        body.resize(cut);
      }
    } else if (conv == 'r') {
      py_repr(v, body);
    } else {
      require_defined(v, at);
      if (!v.is_number()) {
        error(at, std::string("%") + conv + " format: a " + (std::strchr("xXo", conv) ? "integer" : "real number") +
                      " is required, not " + std::string(v.type_name()));
      }
      char spec[16];
      std::vector<char> buf(static_cast<size_t>(std::max(precision, 0)) + 400);  // %f of 1e308 has 309 digits
      if (std::strchr("diu", conv) || std::strchr("xXo", conv)) {
        if (std::strchr("xXo", conv) && v.kind() == Value::Kind::kFloat)
          error(at, std::string("%") + conv + " format: an integer is required, not float");
        long long n = v.kind() == Value::Kind::kFloat ? to_int(at, v.as_float()).as_int() : v.as_int();
        std::snprintf(spec, sizeof spec, "%%%s%s%s", plus ? "+" : (space ? " " : ""),
                      precision >= 0 ? ".*" : "", std::strchr("diu", conv) ? "lld" : (conv == 'x' ? "llx" : conv == 'X' ? "llX" : "llo"));
        if (precision >= 0) std::snprintf(buf.data(), buf.size(), spec, precision, n);
        else std::snprintf(buf.data(), buf.size(), spec, n);
      } else {
        std::snprintf(spec, sizeof spec, "%%%s.*%c", plus ? "+" : (space ? " " : ""), conv);
        std::snprintf(buf.data(), buf.size(), spec, precision >= 0 ? precision : 6, v.as_float());
      }
      body = buf.data();
    }
    size_t len = cp_count(body);
    if (static_cast<size_t>(width) > len) {
      size_t pad = width - len;
      if (left) body.append(pad, ' ');
      else if (zero && numeric) {
        size_t sign = !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
        body.insert(sign, pad, '0');
      } else {
        body.insert(0, pad, ' ');
      }
    }
    out += body;
    (void)start;
  }
  // Python skips this check when the single argument has __getitem__ (a list or dict, not a str).
  bool mapping_like = !args.is_tuple() && (args.is_list() || args.is_dict());
  if (next < items->size() && !mapping_like) error(at, "not all arguments converted during string formatting");
  return Value::string(std::move(out));
}

// ---- globals ----

namespace {

bool parse_date(const std::string& s, std::tm* tm) {
  int y, mo, d, h = 0, mi = 0, sec = 0;
  int n = std::sscanf(s.c_str(), "%d-%d-%d%*[ T]%d:%d:%d", &y, &mo, &d, &h, &mi, &sec);
  if (n < 3) return false;
  *tm = std::tm{};
  tm->tm_year = y - 1900;
  tm->tm_mon = mo - 1;
  tm->tm_mday = d;
  tm->tm_hour = h;
  tm->tm_min = mi;
  tm->tm_sec = sec;
  std::tm copy = *tm;
  time_t t = timegm(&copy);  // fills in the weekday and day of the year
  gmtime_r(&t, tm);
  return true;
}

}  // namespace

Value Evaluator::call_global(const Expr& call, int global) {
  switch (static_cast<Global>(global)) {
    case Global::kRaiseException: {
      Args a = bind_args(*this, call, 1, {"message"}, "raise_exception");
      error(call, py_str(a[0]), Error::Kind::kRaised);
    }
    case Global::kStrftimeNow: {
      Args a = bind_args(*this, call, 1, {"format"}, "strftime_now");
      std::string fmt = py_str(a[0]);
      std::tm tm{};
      if (options().date) {
        if (!parse_date(*options().date, &tm)) error(call, "the pinned date '" + *options().date + "' is not YYYY-MM-DD[ HH:MM:SS]");
      } else {
        time_t now = std::time(nullptr);
        localtime_r(&now, &tm);
      }
      std::string out(fmt.size() * 4 + 64, '\0');
      size_t n = fmt.empty() ? 0 : std::strftime(out.data(), out.size(), fmt.c_str(), &tm);
      out.resize(n);
      return Value::string(std::move(out));
    }
    case Global::kNamespace: {
      auto ns = std::make_shared<Namespace>();
      for (size_t i = 1; i < call.args.size(); ++i) {
        Value v = eval(*call.args[i]);
        if (!v.is_dict()) error(call, "namespace() takes mappings as positional arguments");
        for (const auto& [k, item] : v.as_dict().items) ns->attrs.emplace_back(py_str(k), item);
      }
      for (const auto& [key, expr] : call.kwargs) {
        Value v = eval(*expr);
        if (Value* slot = ns->find(key)) *slot = std::move(v);
        else ns->attrs.emplace_back(key, std::move(v));
      }
      return Value::ns(std::move(ns));
    }
    case Global::kRange: {
      std::vector<int64_t> p;
      for (size_t i = 1; i < call.args.size(); ++i) p.push_back(int_arg(*this, call, eval(*call.args[i]), "range"));
      if (p.empty() || p.size() > 3) error(call, "range expected 1 to 3 arguments");
      int64_t start = p.size() == 1 ? 0 : p[0], stop = p.size() == 1 ? p[0] : p[1], step = p.size() == 3 ? p[2] : 1;
      if (step == 0) error(call, "range() arg 3 must not be zero");
      List out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
        out.push_back(Value::integer(i));
        if (out.size() > 100000) error(call, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        if (__builtin_add_overflow(i, step, &i)) break;
      }
      return Value::list(std::move(out));
    }
    case Global::kDict: {
      auto d = std::make_shared<Dict>();
      for (const auto& [key, expr] : call.kwargs) d->items.emplace_back(Value::string(key), eval(*expr));
      return Value::dict(std::move(d));
    }
    default: break;
  }
  error(call, "the global '" + std::string(kGlobalNames[global]) + "'", Error::Kind::kUnsupported);
}

}  // namespace air::jinja
