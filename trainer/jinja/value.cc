// Python's semantics for the engine's values: str(), repr(), truthiness, ==, ordering, json.dumps.
#include "trainer/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "trainer/jinja/runtime.h"

namespace air::jinja {

Value Value::string(std::string s) {
  auto owned = std::make_shared<const std::string>(std::move(s));
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = *owned;
  v.ptr_ = std::move(owned);
  return v;
}

Value Value::list(List items) { return list(std::make_shared<const List>(std::move(items))); }

Value Value::list(std::shared_ptr<const List> items) {
  Value v;
  v.kind_ = Kind::kList;
  v.ptr_ = std::move(items);
  return v;
}

Value Value::dict(std::shared_ptr<const Dict> d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.ptr_ = std::move(d);
  return v;
}

Value Value::ns(std::shared_ptr<Namespace> n) {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.ptr_ = std::move(n);
  return v;
}

Value Value::loop(std::shared_ptr<LoopState> l) {
  Value v;
  v.kind_ = Kind::kLoop;
  v.ptr_ = std::move(l);
  return v;
}

Value Value::callable(std::shared_ptr<const Callable> c) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.ptr_ = std::move(c);
  return v;
}

Value Value::generator(List items, const char* type_name) {
  auto g = std::make_shared<Generator>();
  g->items = std::move(items);
  g->type_name = type_name;
  Value v;
  v.kind_ = Kind::kGenerator;
  v.ptr_ = std::move(g);
  return v;
}

Value Value::undefined(std::string hint) {
  auto owned = std::make_shared<const std::string>(std::move(hint));
  Value v;
  v.s_ = *owned;
  v.i_ = -1;
  v.ptr_ = std::move(owned);
  return v;
}

std::string Value::undefined_message() const {
  if (i_ == -1) return std::string(s_);
  auto owner = static_cast<Kind>(i_);
  if (owner == Kind::kUndefined) return "'" + std::string(s_) + "' is undefined";
  // The owner's type by kind alone (no object at hand): a generator is "generator", a tuple "list".
  Value probe;
  probe.kind_ = owner == Kind::kGenerator ? Kind::kNone : owner;
  std::string_view name = owner == Kind::kGenerator ? "generator" : probe.type_name();
  return "'" + std::string(name) + " object' has no attribute '" + std::string(s_) + "'";
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0.0;
    case Kind::kString: return !s_.empty();
    case Kind::kList: return !as_list().empty();
    case Kind::kDict: return !as_dict().items.empty();
    default: return true;
  }
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return tuple_ ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kLoop: return "LoopContext";
    case Kind::kCallable: return "function";
    case Kind::kGenerator: return as_generator().type_name;
  }
  return "object";
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (py_equal(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

Value* Namespace::find(std::string_view name) {
  for (auto& [k, v] : attrs)
    if (k == name) return &v;
  return nullptr;
}

bool py_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.kind() == K::kFloat || b.kind() == K::kFloat) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone: return true;
    case K::kString: return a.as_string() == b.as_string();
    case K::kList: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (a.is_tuple() != b.is_tuple()) return false;
      if (&x == &y) return true;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!py_equal(x[i], y[i])) return false;
      return true;
    }
    case K::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (&x == &y) return true;
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (!other || !py_equal(v, *other)) return false;
      }
      return true;
    }
    case K::kNamespace: return &a.as_namespace() == &b.as_namespace();
    case K::kLoop: return &a.as_loop() == &b.as_loop();
    case K::kCallable: return &a.as_callable() == &b.as_callable();
    case K::kGenerator: return &a.as_generator() == &b.as_generator();
    default: return false;
  }
}

bool py_compare(const Value& a, const Value& b, int* out) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.kind() == K::kFloat || b.kind() == K::kFloat) {
      double x = a.as_float(), y = b.as_float();
      *out = x < y ? -1 : (x > y ? 1 : 0);
    } else {
      int64_t x = a.as_int(), y = b.as_int();
      *out = x < y ? -1 : (x > y ? 1 : 0);
    }
    return true;
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order, which is Python's.
    int c = a.as_string().compare(b.as_string());
    *out = c < 0 ? -1 : (c > 0 ? 1 : 0);
    return true;
  }
  if (a.is_list() && b.is_list()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (py_equal(x[i], y[i])) continue;
      return py_compare(x[i], y[i], out);
    }
    *out = x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    return true;
  }
  return false;
}

void py_float_repr(double f, std::string& out) {
  if (std::isnan(f)) { out += "nan"; return; }
  if (std::isinf(f)) { out += f < 0 ? "-inf" : "inf"; return; }
  if (f == 0) { out += std::signbit(f) ? "-0.0" : "0.0"; return; }
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |f| < 1e16, else d.ddde+XX.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string_view sci(buf, r.ptr - buf);
  size_t e = sci.find('e');
  std::string_view mant = sci.substr(0, e);
  int exp = std::atoi(std::string(sci.substr(e + 1)).c_str());
  bool neg = mant[0] == '-';
  if (neg) mant.remove_prefix(1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  if (neg) out += '-';
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1);
    }
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out += digits;
  } else {
    int int_digits = exp + 1;
    if (static_cast<int>(digits.size()) <= int_digits) {
      out += digits;
      out.append(int_digits - digits.size(), '0');
      out += ".0";
    } else {
      out.append(digits, 0, int_digits);
      out += '.';
      out.append(digits, int_digits);
    }
  }
}

namespace {

void repr_string(std::string_view s, std::string& out) {
  // Python picks single quotes unless the string has ' and no ".
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char q = has_single && !has_double ? '"' : '\'';
  out += q;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
      // U+0080..U+009F are not printable in Python: \x80 .. \x9f.
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned char>(s[i + 1]));
      out += b;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
}

}  // namespace

void py_repr(const Value& v, std::string& out) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kString: repr_string(v.as_string(), out); return;
    case K::kList: {
      out += v.is_tuple() ? '(' : '[';
      bool first = true;
      for (const Value& item : v.as_list()) {
        if (!first) out += ", ";
        first = false;
        py_repr(item, out);
      }
      if (v.is_tuple() && v.as_list().size() == 1) out += ',';
      out += v.is_tuple() ? ')' : ']';
      return;
    }
    case K::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [k, item] : v.as_dict().items) {
        if (!first) out += ", ";
        first = false;
        py_repr(k, out);
        out += ": ";
        py_repr(item, out);
      }
      out += '}';
      return;
    }
    case K::kUndefined: out += "Undefined"; return;
    default: py_str(v, out); return;
  }
}

void py_str(const Value& v, std::string& out) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kUndefined: return;
    case K::kNone: out += "None"; return;
    case K::kBool: out += v.as_bool() ? "True" : "False"; return;
    case K::kInt: {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, v.as_int());
      out.append(buf, r.ptr);
      return;
    }
    case K::kFloat: py_float_repr(v.as_float(), out); return;
    case K::kString: out += v.as_string(); return;
    case K::kList:
    case K::kDict: py_repr(v, out); return;
    case K::kNamespace: out += "<Namespace>"; return;
    case K::kLoop: out += "<LoopContext>"; return;
    case K::kCallable: out += "<function>"; return;
    case K::kGenerator: out += "<generator>"; return;
  }
}

std::string py_str(const Value& v) {
  std::string s;
  py_str(v, s);
  return s;
}

namespace {

void json_string(std::string_view s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else if (c >= 0x80 && ensure_ascii) {
      size_t len = 1;
      uint32_t cp = decode_utf8(s, i, &len);
      auto emit = [&](uint32_t u) {
        char b[16];
        std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(u & 0xffff));
        out += b;
      };
      if (cp >= 0x10000) {
        cp -= 0x10000;
        emit(0xd800 + (cp >> 10));
        emit(0xdc00 + (cp & 0x3ff));
      } else {
        emit(cp);
      }
      i += len - 1;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

bool dumps(const Value& v, const JsonDumpOptions& o, int depth, std::string& out, std::string* bad) {
  using K = Value::Kind;
  auto newline = [&](int d) {
    if (o.indent < 0 && o.indent_str.empty()) return;
    out += '\n';
    for (int i = 0; i < d; ++i) {
      if (!o.indent_str.empty()) out += o.indent_str;
      else out.append(static_cast<size_t>(o.indent), ' ');
    }
  };
  switch (v.kind()) {
    case K::kNone: out += "null"; return true;
    case K::kBool: out += v.as_bool() ? "true" : "false"; return true;
    case K::kInt: py_str(v, out); return true;
    case K::kFloat: {
      double f = v.as_float();
      if (std::isnan(f)) out += "NaN";
      else if (std::isinf(f)) out += f < 0 ? "-Infinity" : "Infinity";
      else py_float_repr(f, out);
      return true;
    }
    case K::kString: json_string(v.as_string(), o.ensure_ascii, out); return true;
    case K::kList: {
      const List& l = v.as_list();
      if (l.empty()) { out += "[]"; return true; }
      out += '[';
      newline(depth + 1);
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) {
          out += o.item_separator;
          newline(depth + 1);
        }
        if (!dumps(l[i], o, depth + 1, out, bad)) return false;
      }
      newline(depth);
      out += ']';
      return true;
    }
    case K::kDict: {
      const Dict& d = v.as_dict();
      if (d.items.empty()) { out += "{}"; return true; }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : d.items) items.push_back(&kv);
      if (o.sort_keys) {
        for (const auto* kv : items)
          if (!kv->first.is_string()) { *bad = "sort_keys on non-string keys"; return false; }
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) {
          return a->first.as_string() < b->first.as_string();
        });
      }
      out += '{';
      newline(depth + 1);
      bool first = true;
      for (const auto* kv : items) {
        if (!first) {
          out += o.item_separator;
          newline(depth + 1);
        }
        first = false;
        const Value& k = kv->first;
        if (k.is_string()) {
          json_string(k.as_string(), o.ensure_ascii, out);
        } else if (k.is_none() || k.is_number()) {
          std::string ks;
          if (k.is_none()) ks = "null";
          else if (k.kind() == K::kBool) ks = k.as_bool() ? "true" : "false";
          else py_str(k, ks);
          json_string(ks, o.ensure_ascii, out);
        } else {
          *bad = "keys must be str, int, float, bool or None, not " + std::string(k.type_name());
          return false;
        }
        out += o.key_separator;
        if (!dumps(kv->second, o, depth + 1, out, bad)) return false;
      }
      newline(depth);
      out += '}';
      return true;
    }
    default:
      *bad = "Object of type " + std::string(v.type_name()) + " is not JSON serializable";
      return false;
  }
}

}  // namespace

bool json_dumps(const Value& v, const JsonDumpOptions& options, std::string& out, std::string* bad) {
  return dumps(v, options, 0, out, bad);
}

}  // namespace air::jinja
