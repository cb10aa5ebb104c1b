// git's wildmatch semantics (WM_PATHNAME, case-sensitive), written from the documented behaviour:
// `*` `?` `[...]` stop at '/', `**` only spans directories when it stands alone between slashes.
#include <cctype>
#include <cstring>

#include "core/snapshot/ignore.h"

namespace air {
namespace {

enum class Wild { kMatch, kNoMatch, kAbortAll, kAbortToStarStar };

struct Glob {
  const unsigned char* begin;  // the pattern's first character, for "is `**` at the start?"
  const unsigned char* p_end;
  const unsigned char* t_end;
};

bool class_matches(std::string_view name, unsigned char c, bool* known) {
  *known = true;
  if (name == "alnum") return std::isalnum(c);
  if (name == "alpha") return std::isalpha(c);
  if (name == "blank") return c == ' ' || c == '\t';
  if (name == "cntrl") return std::iscntrl(c);
  if (name == "digit") return std::isdigit(c);
  if (name == "graph") return std::isgraph(c);
  if (name == "lower") return std::islower(c);
  if (name == "print") return std::isprint(c);
  if (name == "punct") return std::ispunct(c);
  if (name == "space") return std::isspace(c);
  if (name == "upper") return std::isupper(c);
  if (name == "xdigit") return std::isxdigit(c);
  *known = false;
  return false;
}

// Matches the bracket expression starting after '[' at *pp against t; leaves *pp on the closing ']'.
Wild match_class(const Glob& g, const unsigned char** pp, unsigned char t) {
  const unsigned char* p = *pp;
  auto at = [&](const unsigned char* q) -> unsigned char { return q < g.p_end ? *q : 0; };
  unsigned char pc = at(p);
  bool negated = false;
  if (pc == '!' || pc == '^') {
    negated = true;
    pc = at(++p);
  }
  unsigned char prev = 0;
  bool matched = false;
  do {
    if (!pc) return Wild::kAbortAll;
    if (pc == '\\') {
      pc = at(++p);
      if (!pc) return Wild::kAbortAll;
      if (t == pc) matched = true;
    } else if (pc == '-' && prev && at(p + 1) && at(p + 1) != ']') {
      pc = at(++p);
      if (pc == '\\') {
        pc = at(++p);
        if (!pc) return Wild::kAbortAll;
      }
      if (t >= prev && t <= pc) matched = true;
      pc = 0;  // a range's end cannot start another range
    } else if (pc == '[' && at(p + 1) == ':') {
      const unsigned char* s = p + 2;
      const unsigned char* q = s;
      while (at(q) && at(q) != ']') ++q;
      if (!at(q)) return Wild::kAbortAll;
      if (q - s < 1 || q[-1] != ':') {
        // No ":]": the '[' is an ordinary member of the set.
        if (t == '[') matched = true;
        pc = '[';
      } else {
        bool known = false;
        bool m = class_matches(std::string_view(reinterpret_cast<const char*>(s), q - s - 1), t, &known);
        if (!known) return Wild::kAbortAll;
        if (m) matched = true;
        p = q;
        pc = 0;  // a class cannot start a range
      }
    } else if (t == pc) {
      matched = true;
    }
    prev = pc;
    pc = at(++p);
  } while (pc != ']');
  *pp = p;
  if (matched == negated || t == '/') return Wild::kNoMatch;
  return Wild::kMatch;
}

Wild wild(const Glob& g, const unsigned char* p, const unsigned char* t) {
  for (; p < g.p_end; ++p, ++t) {
    unsigned char pc = *p;
    bool t_end = t >= g.t_end;
    if (t_end && pc != '*') return Wild::kAbortAll;
    switch (pc) {
      case '\\':
        ++p;
        if (p >= g.p_end || *t != *p) return Wild::kNoMatch;
        break;
      case '?':
        if (*t == '/') return Wild::kNoMatch;
        break;
      case '[': {
        ++p;
        Wild w = match_class(g, &p, *t);
        if (w != Wild::kMatch) return w;
        break;
      }
      case '*': {
        bool match_slash = false;
        const unsigned char* first = p;
        while (p + 1 < g.p_end && p[1] == '*') ++p;
        if (p > first) {
          // `**` is special only as a whole path component: after '/' or at the start, before '/' or at
          // the end. Elsewhere it behaves like a single `*`.
          const unsigned char* after = p + 1;
          bool starts = first == g.begin || first[-1] == '/';
          bool ends = after == g.p_end || *after == '/' ||
                      (after + 1 < g.p_end && after[0] == '\\' && after[1] == '/');
          if (starts && ends) {
            if (after < g.p_end && *after == '/' && wild(g, after + 1, t) == Wild::kMatch) return Wild::kMatch;
            match_slash = true;
          }
        }
        ++p;  // now the first pattern character after the stars
        if (p == g.p_end) {
          if (!match_slash && std::memchr(t, '/', g.t_end - t)) return Wild::kNoMatch;
          return Wild::kMatch;
        }
        for (; t < g.t_end; ++t) {
          Wild w = wild(g, p, t);
          if (w != Wild::kNoMatch) {
            if (!match_slash || w != Wild::kAbortToStarStar) return w;
          } else if (!match_slash && *t == '/') {
            return Wild::kAbortToStarStar;
          }
        }
        return Wild::kAbortAll;
      }
      default:
        if (*t != pc) return Wild::kNoMatch;
    }
  }
  return t < g.t_end ? Wild::kNoMatch : Wild::kMatch;
}

}  // namespace

bool ignore_glob_match(std::string_view pattern, std::string_view text) {
  auto p = reinterpret_cast<const unsigned char*>(pattern.data());
  auto t = reinterpret_cast<const unsigned char*>(text.data());
  Glob g{p, p + pattern.size(), t + text.size()};
  return wild(g, p, t) == Wild::kMatch;
}

}  // namespace air
