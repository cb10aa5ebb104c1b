// libFuzzer target: the chat-template engine (trainer/jinja, no libtorch). The input is a template's source:
// parsing and rendering it over a small conversation must give text or an air::jinja::Error, never a crash,
// a hang or another exception; an error's line and column lie inside the template.
#include <algorithm>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_check.h"
#include "trainer/jinja/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": " sys "}, {"role": "user", "content": "héllo {{ x }}"},
                 {"role": "assistant", "content": "<think>r</think>a", "tool_calls": [
                   {"type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  int lines = 1 + static_cast<int>(std::count(source.begin(), source.end(), '\n') +
                                   std::count(source.begin(), source.end(), '\r'));
  try {
    auto t = air::jinja::Template::parse(source, "fuzz.jinja");
    air::jinja::RenderOptions options;
    options.date = "2026-12-06";
    auto r = t.render(context, options);
    for (auto [a, b] : r.generation_spans) FUZZ_CHECK(a <= b && b <= r.text.size(), "a span outside the text");
  } catch (const air::jinja::Error& e) {
    FUZZ_CHECK(e.line >= 1 && e.line <= lines + 1 && e.column >= 1, "an error located outside the template");
  }
  return 0;
}
