// PCRE2 wrapper for pre-tokenizer patterns (see tokenizer_regex.h for why `\s` is rewritten).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "trainer/tokenizer/regex.h"

#include <pcre2.h>

#include <stdexcept>

namespace air::train {
namespace {

// Unicode White_Space, which is what Oniguruma's (and Rust regex's) `\s` means on UTF-8 text.
constexpr std::string_view kWhiteSpaceSet =
    R"(\x{9}-\x{D}\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

std::string oniguruma_to_pcre2(std::string_view p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpaceSet) : "[" + std::string(kWhiteSpaceSet) + "]";
      } else if (e == 'S') {
        if (in_class) throw std::invalid_argument("\\S inside a character class is not supported");
        out += "[^" + std::string(kWhiteSpaceSet) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      size_t end = p.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out.append(p.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

struct SplitRegex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

SplitRegex::SplitRegex(std::string_view pattern, bool literal) : c_(std::make_unique<Compiled>()) {
  std::string translated = literal ? std::string(pattern) : oniguruma_to_pcre2(pattern);
  // PCRE2_LITERAL refuses PCRE2_UCP, which a literal does not need anyway.
  uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  int error = 0;
  PCRE2_SIZE offset = 0;
  c_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), options,
                           &error, &offset, nullptr);
  if (!c_->code) {
    throw std::invalid_argument("regex does not compile: " + pcre2_message(error) + " at offset " +
                                std::to_string(offset));
  }
  c_->jit = pcre2_jit_compile(c_->code, PCRE2_JIT_COMPLETE) == 0;
}

SplitRegex::SplitRegex(SplitRegex&&) noexcept = default;
SplitRegex& SplitRegex::operator=(SplitRegex&&) noexcept = default;
SplitRegex::~SplitRegex() = default;

namespace {

// Match data and a JIT stack per thread, so one SplitRegex can serve many threads and short inputs
// pay no allocation. The JIT stack grows on demand for pathological inputs.
struct ThreadScratch {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ThreadScratch() {
    data = pcre2_match_data_create(4, nullptr);
    context = pcre2_match_context_create(nullptr);
  }
  ~ThreadScratch() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
  void grow_stack() {
    pcre2_jit_stack_free(stack);
    stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
};

ThreadScratch& scratch() {
  thread_local ThreadScratch s;
  return s;
}

}  // namespace

bool SplitRegex::find(std::string_view text, size_t start, size_t& match_begin, size_t& match_end) const {
  auto& s = scratch();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc;
  for (;;) {
    rc = c_->jit ? pcre2_jit_match(c_->code, subject, text.size(), start, 0, s.data, s.context)
                 : pcre2_match(c_->code, subject, text.size(), start, 0, s.data, s.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && s.stack == nullptr) {
      s.grow_stack();
      continue;
    }
    break;
  }
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) throw std::runtime_error("pre-tokenizer regex failed: " + pcre2_message(rc));
  PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
  match_begin = ov[0];
  match_end = ov[1];
  return true;
}

void SplitRegex::split_isolated(std::string_view text, std::vector<std::string_view>& out) const {
  size_t pos = 0;       // where the next gap starts
  size_t search = 0;    // where the next search starts
  size_t b = 0, e = 0;
  while (search <= text.size() && find(text, search, b, e)) {
    if (e == b) {
      // An empty match splits nothing; step over one whole character.
      search = b + 1;
      while (search < text.size() && (static_cast<unsigned char>(text[search]) & 0xC0) == 0x80) ++search;
      continue;
    }
    if (b > pos) out.push_back(text.substr(pos, b - pos));
    out.push_back(text.substr(b, e - b));
    pos = search = e;
  }
  if (pos < text.size()) out.push_back(text.substr(pos));
}

}  // namespace air::train
