// Conversations in the model's own chat template, and which characters of the rendering are trained.
//
// The template comes from the `chat_template` setting (a file), else tokenizer_config.json's `chat_template`
// (a string, or the list of named templates: "default", and "tool_use" for a record with tools, as
// transformers picks), else chat_template.jinja beside it. It is rendered by our Jinja engine
// (trainer/jinja/) with the variables transformers passes: messages, tools, add_generation_prompt and the
// tokenizer's special tokens (bos_token, eos_token, unk/sep/pad/cls/mask_token, additional_special_tokens).
//
// Trained spans (train_on):
//   all             every character of the rendering;
//   assistant       every assistant message's content and what the template writes after it up to the next
//                   message (the end-of-turn token), without trailing whitespace; never system, user, tool,
//                   role headers or the generation prompt. prompt_completion trains only its completion;
//   last_assistant  the same for the last assistant message only.
// A template with {% generation %} blocks gives the spans itself (the k-th block is the k-th assistant
// message). Otherwise the spans come from rendering prefixes of the conversation (the way torchtune and NeMo
// do): for assistant message i, A = render(messages[:i], add_generation_prompt=true) and
// B = render(messages[:i+1]); the turn is [len(A), len(B)) of the full rendering F. This assumes that the
// template renders a conversation's start the same whatever follows (F starts with A, and with B). Where a
// template rewrites a turn once more follows (Qwen3 drops the <think> block of assistant turns before the
// last user message; Phi-3 ends a conversation with eos_token), B is not a prefix of F: the turn then ends
// after the text B writes after the message's content as far as F writes it too (its end-of-turn marker,
// e.g. "<|im_end|>", cut back to a '>' or whitespace where B goes on otherwise). When F does not start with A
// (Mistral's templates put the system message into the user turn only when it is the last message), the
// content is located by difference against renderings with a marker for it, and the turn starts where B's
// text after A's puts it; when that fails too, the record is an error (the template cannot be split).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/data/records.h"

namespace air::jinja {
class Template;
}

namespace air::train {

enum class TrainOn { kAssistant, kLastAssistant, kAll };
std::optional<TrainOn> parse_train_on(const std::string& name);  // assistant | last_assistant | all
const char* train_on_name(TrainOn t);

using Spans = std::vector<std::pair<size_t, size_t>>;  // byte ranges [first, second), sorted, disjoint

class ChatTemplate {
 public:
  // `file` (the chat_template setting) when not empty, else the tokenizer folder's template; nullopt when
  // neither has one. `date` pins strftime_now (chat_template_date). Throws air::Error on a template that does
  // not parse (its line and column), or an unreadable file.
  static std::optional<ChatTemplate> load(const std::string& tokenizer_dir, const std::string& file,
                                          const std::optional<std::string>& date);
  // From source text; `special_tokens` are the template's variables (bos_token, ...).
  static ChatTemplate from_source(const std::string& source, const std::string& name,
                                  const nlohmann::json& special_tokens, const std::optional<std::string>& date);

  struct Rendering {
    std::string text;
    std::vector<std::pair<size_t, size_t>> generation_spans;
  };
  // Renders the first `count` of `messages` (read in place, not copied); throws RecordError (at `where`) when
  // the template raises or fails on this record.
  Rendering render(const nlohmann::json& messages, size_t count, const nlohmann::json& tools, bool add_generation_prompt,
                   const std::string& where) const;
  Rendering render(const nlohmann::json& messages, const nlohmann::json& tools, bool add_generation_prompt,
                   const std::string& where) const {
    return render(messages, messages.size(), tools, add_generation_prompt, where);
  }

  const std::string& origin() const { return origin_; }  // "tokenizer_config.json", a file's path, ...
  const std::string& source() const { return source_; }  // the default template's text (for cache keys)
  const nlohmann::json& special_tokens() const { return vars_; }
  // The date strftime_now renders: the pinned one, else today's (UTC) when the template calls strftime_now,
  // else "" (part of the tokenized-data cache's key).
  std::string date_pin() const;
  bool has_generation_blocks() const;

 private:
  std::shared_ptr<const jinja::Template> default_, tool_use_;
  nlohmann::json vars_;
  std::optional<std::string> date_;
  std::string origin_, source_;
};

// The special tokens of a tokenizer_config.json as template variables (a string, or {"content": ...}).
nlohmann::json special_tokens_from_config(const nlohmann::json& tokenizer_config);

// A conversation record rendered with its trained spans (see the top of this file). Throws RecordError.
struct RenderedRecord {
  std::string text;
  Spans trained;
};
RenderedRecord render_conversation(const ChatTemplate& t, const Record& r, TrainOn train_on);

}  // namespace air::train
