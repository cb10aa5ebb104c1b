// A Jinja2 engine for chat templates: renders tokenizer_config.json's `chat_template` exactly as
// transformers does with Python's jinja2 (ImmutableSandboxedEnvironment, trim_blocks and lstrip_blocks on,
// the loop-controls extension, transformers' `tojson`, `raise_exception`, `strftime_now`, and the
// `{% generation %}` block of its AssistantTracker). No libtorch (library air_jinja).
//
// The contract between the engine (trainer/jinja/) and the chat-data code (trainer/data/): parse once,
// render many times from any number of threads; every error says where in the template it stands.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace air::jinja {

// Any failure to parse or render. `line` and `column` (1-based) locate it in the template's source.
class Error : public std::runtime_error {
 public:
  enum class Kind {
    kSyntax,       // the template is not valid Jinja
    kUnsupported,  // valid Jinja that this engine does not implement (names the feature)
    kRaised,       // the template called raise_exception(message): the record's fault, not the template's
    kRuntime,      // a type error, an undefined attribute used as a value, ... (as jinja2 raises)
  };
  Error(Kind kind, std::string message, int line, int column)
      : std::runtime_error(std::move(message)), kind(kind), line(line), column(column) {}
  Kind kind;
  int line;
  int column;
};

struct RenderOptions {
  // What strftime_now(format) formats: "now" by default; a fixed date ("2026-12-06") makes renders
  // reproducible (the `chat_template_date` setting).
  std::optional<std::string> date;
};

struct Rendered {
  std::string text;
  // Byte ranges [first, second) of `text` written inside {% generation %} ... {% endgeneration %}.
  std::vector<std::pair<size_t, size_t>> generation_spans;
};

class Template {
 public:
  // Parses `source`; throws Error (kSyntax or kUnsupported) with the line and column. `name` goes into
  // messages ("tokenizer_config.json:chat_template:12:5: ...").
  static Template parse(std::string_view source, std::string name = "chat_template");

  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;
  ~Template();

  // Renders with `context` as the template's variables (messages, tools, add_generation_prompt,
  // bos_token, eos_token, ... as transformers passes them). Thread-safe. Throws Error.
  Rendered render(const nlohmann::json& context, const RenderOptions& options = {}) const;
  // The same with the context's key order kept (Python dicts keep insertion order: `tojson` and `items`
  // write keys in that order, so a context parsed as ordered_json renders tools exactly as transformers does).
  Rendered render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;
  // `context`'s variables with `messages` set to the first `count` items of the list `messages`, which is
  // read in place (a conversation rendered in prefixes, as chat data's trained spans need, copies nothing).
  Rendered render(const nlohmann::json& context, const nlohmann::json& messages, size_t count,
                  const RenderOptions& options = {}) const;

  bool has_generation_blocks() const;
  const std::string& name() const;

  struct Impl;

 private:
  explicit Template(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace air::jinja
