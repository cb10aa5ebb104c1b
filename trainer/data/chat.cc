// Finding, parsing and rendering the chat template, and the trained spans of a conversation (chat.h says how).
#include "trainer/data/chat.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "trainer/jinja/jinja.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::shared_ptr<const jinja::Template> parse(const std::string& source, const std::string& name) {
  try {
    return std::make_shared<const jinja::Template>(jinja::Template::parse(source, name));
  } catch (const jinja::Error& e) {
    const bool unsupported = e.kind == jinja::Error::Kind::kUnsupported;
    throw Error(std::string(e.what()),
                unsupported ? "the template uses a Jinja feature air-train's engine lacks; set chat_template: to a file "
                              "with a template that avoids it"
                            : "fix the template, or set chat_template: to a file with a working one");
  }
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// The message's content as the text the template most likely wrote (a string, or its text parts joined).
std::string content_text(const nlohmann::json& m) {
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  std::string out;
  if (it->is_array())
    for (const auto& part : *it)
      if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
  return out;
}

std::string trimmed(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && is_space(s[a])) ++a;
  while (b > a && is_space(s[b - 1])) --b;
  return s.substr(a, b - a);
}

size_t common_prefix(const std::string& a, size_t ai, const std::string& b, size_t bi) {
  size_t n = 0;
  while (ai + n < a.size() && bi + n < b.size() && a[ai + n] == b[bi + n]) ++n;
  return n;
}
size_t common_suffix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[a.size() - 1 - n] == b[b.size() - 1 - n]) ++n;
  return n;
}

// How much of what the template writes after the turn's content in `upto` (from `upto_at`) it also writes in
// `full` (from `full_at`): the end-of-turn marker. Where `upto` goes on with text that `full` does not have
// (Phi-3 ends a conversation with eos_token, and a longer one with the next message's "<|user|>"), the common
// part is cut back to its last '>' or whitespace, so that "<|end|>\n<|" ends at "<|end|>". npos when `upto`
// writes something after the content and none of it is in `full`.
size_t end_of_turn_marker(const std::string& upto, size_t upto_at, const std::string& full, size_t full_at) {
  size_t n = common_prefix(upto, upto_at, full, full_at);
  if (upto_at + n < upto.size()) {
    while (n > 0 && upto[upto_at + n - 1] != '>' && !is_space(upto[upto_at + n - 1])) --n;
    bool rest_blank = true;
    for (size_t k = upto_at; k < upto.size(); ++k) rest_blank = rest_blank && is_space(upto[k]);
    if (n == 0 && !rest_blank) return std::string::npos;
  }
  return n;
}

// Where message i's content lies in `rendering`: the rendering compared with one of the same messages
// whose message i has a one-byte marker as its content (`marked`): the bytes before the first difference and
// after the last are the template's own. [first, second) of `rendering`; nullopt when the two are the same
// (the template does not write this message's content).
std::optional<std::pair<size_t, size_t>> content_by_difference(const std::string& rendering, const std::string& marked) {
  if (rendering == marked) return std::nullopt;
  const size_t head = common_prefix(rendering, 0, marked, 0);
  const size_t tail = std::min(common_suffix(rendering, marked), std::min(rendering.size(), marked.size()) - head);
  return std::make_pair(head, rendering.size() - tail);
}

nlohmann::json with_marked_content(const nlohmann::json& messages, size_t i) {
  nlohmann::json out = messages;
  const std::string c = content_text(messages[i]);
  // A byte the content neither starts nor ends with, so that the difference starts and ends exactly at it.
  std::string marker(1, '\x01');
  if (!c.empty() && (c.front() == '\x01' || c.back() == '\x01')) marker[0] = '\x02';
  out[i]["content"] = marker;
  return out;
}

// Where the rendering `before` (A) ends in `upto` (B) when the two differ earlier: the position p <= limit
// (B's content start) at which B's text up to p and A have the longest common ending; the shortest head wins
// a tie. npos when none shares a byte.
size_t align_end(const std::string& before, const std::string& upto, size_t limit) {
  size_t best = std::string::npos, best_len = 0;
  for (size_t p = limit + 1; p-- > (limit > 256 ? limit - 256 : 0);) {
    size_t n = 0;
    while (n < p && n < before.size() && upto[p - 1 - n] == before[before.size() - 1 - n]) ++n;
    if (n > best_len) best = p, best_len = n;
  }
  return best;
}

// The span of assistant message i in the full rendering `full` (chat.h). The usual way, by prefix renderings:
// A = messages[:i] with the generation prompt, B = messages[:i+1]; the turn is [len(A), len(B)).
std::pair<size_t, size_t> turn_by_prefixes(const ChatTemplate& t, const Record& r, size_t i, const std::string& full) {
  const std::string before = t.render(r.messages, i, r.tools, true, r.where).text;
  const std::string upto = t.render(r.messages, i + 1, r.tools, false, r.where).text;
  auto fail = [&](const std::string& what) {
    return RecordError(r.where, "cannot find " + what + " of assistant message " + std::to_string(i) +
                                    " in the rendering: the chat template renders the conversation differently when "
                                    "more follows (use a template with {% generation %} blocks, or train_on: all)");
  };
  size_t start = before.size();
  std::optional<std::pair<size_t, size_t>> in_full, in_upto;  // the content, when located by difference
  if (!starts_with(full, before)) {
    // The template writes the conversation before this turn differently when more follows (Mistral's put the
    // system message into the user turn that is last, so A has it there and F not). The turn is then found by
    // where the template writes the message's content, which renderings with a marker for that content show
    // (in F and in B), and what B writes between the end of A's text and the content (Mistral v3's space).
    const nlohmann::json marked = with_marked_content(r.messages, i);
    in_full = content_by_difference(full, t.render(marked, r.tools, false, r.where).text);
    in_upto = content_by_difference(upto, t.render(marked, i + 1, r.tools, false, r.where).text);
    if (!in_full || !in_upto) throw fail("the content");
    const size_t p = align_end(before, upto, in_upto->first);
    if (p == std::string::npos) throw fail("the start");
    const size_t head = in_upto->first - p;
    if (in_full->first < head || full.compare(in_full->first - head, head, upto, p, head) != 0) throw fail("the start");
    start = in_full->first - head;
  }
  size_t end;
  if (starts_with(full, upto) && upto.size() >= start) {
    end = upto.size();
  } else if (in_full) {
    const size_t marker = end_of_turn_marker(upto, in_upto->second, full, in_full->second);
    if (marker == std::string::npos) throw fail("the end");
    end = in_full->second + marker;
  } else {
    // The template rewrites this turn once more follows: the turn ends after its end-of-turn marker, the text
    // `upto` writes after the message's content, as far as `full` writes it too after that content.
    // Reasoning templates (Qwen3 and the like) render only what follows "</think>" in earlier turns.
    std::string raw = content_text(r.messages[i]);
    if (size_t think = raw.rfind("</think>"); think != std::string::npos) raw = raw.substr(think + 8);
    const std::string content = trimmed(raw);
    const size_t in_b = content.empty() ? start : upto.rfind(content);
    const size_t at = content.empty() ? start : full.find(content, start);
    if (in_b == std::string::npos || in_b < start || at == std::string::npos) throw fail("the content");
    const size_t marker = end_of_turn_marker(upto, in_b + content.size(), full, at + content.size());
    if (marker == std::string::npos || (marker == 0 && content.empty())) throw fail("the end");
    end = at + content.size() + marker;
  }
  while (end > start && is_space(full[end - 1])) --end;
  return {start, end};
}

}  // namespace

std::optional<TrainOn> parse_train_on(const std::string& name) {
  for (auto t : {TrainOn::kAssistant, TrainOn::kLastAssistant, TrainOn::kAll})
    if (name == train_on_name(t)) return t;
  return std::nullopt;
}

const char* train_on_name(TrainOn t) {
  switch (t) {
    case TrainOn::kAssistant: return "assistant";
    case TrainOn::kLastAssistant: return "last_assistant";
    case TrainOn::kAll: return "all";
  }
  return "?";
}

nlohmann::json special_tokens_from_config(const nlohmann::json& cfg) {
  nlohmann::json vars = nlohmann::json::object();
  if (!cfg.is_object()) return vars;
  auto text_of = [](const nlohmann::json& v) -> std::optional<std::string> {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return std::nullopt;
  };
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"})
    if (auto it = cfg.find(key); it != cfg.end())
      if (auto s = text_of(*it)) vars[key] = *s;
  if (auto it = cfg.find("additional_special_tokens"); it != cfg.end() && it->is_array()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& v : *it)
      if (auto s = text_of(v)) list.push_back(*s);
    vars["additional_special_tokens"] = list;
  }
  return vars;
}

ChatTemplate ChatTemplate::from_source(const std::string& source, const std::string& name,
                                       const nlohmann::json& special_tokens, const std::optional<std::string>& date) {
  ChatTemplate t;
  t.default_ = parse(source, name);
  t.vars_ = special_tokens.is_object() ? special_tokens : nlohmann::json::object();
  t.date_ = date;
  t.origin_ = name;
  t.source_ = source;
  return t;
}

std::optional<ChatTemplate> ChatTemplate::load(const std::string& tokenizer_dir, const std::string& file,
                                               const std::optional<std::string>& date) {
  const fs::path dir(tokenizer_dir);
  nlohmann::json cfg = nlohmann::json::object();
  if (auto text = read_text(dir / "tokenizer_config.json")) {
    cfg = nlohmann::json::parse(*text, nullptr, false);
    if (cfg.is_discarded()) throw Error((dir / "tokenizer_config.json").string() + ": not valid JSON");
  }
  const nlohmann::json vars = special_tokens_from_config(cfg);
  if (!file.empty()) {
    auto text = read_text(file);
    if (!text) throw Error("chat_template: cannot read " + file, "set chat_template to a Jinja file (like chat_template.jinja)");
    return from_source(*text, file, vars, date);
  }
  const std::string cfg_name = (dir / "tokenizer_config.json").string();
  if (auto it = cfg.find("chat_template"); it != cfg.end() && !it->is_null()) {
    if (it->is_string()) return from_source(it->get<std::string>(), cfg_name + ":chat_template", vars, date);
    if (!it->is_array()) throw Error(cfg_name + ": chat_template must be a string or a list of {name, template}");
    std::optional<ChatTemplate> out;
    std::string tool_use, names;
    for (const auto& e : *it) {
      if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("template") || !e["template"].is_string())
        throw Error(cfg_name + ": chat_template list entries must be {\"name\": ..., \"template\": ...}");
      const std::string n = e["name"].get<std::string>();
      names += (names.empty() ? "" : ", ") + n;
      if (n == "default") out = from_source(e["template"].get<std::string>(), cfg_name + ":chat_template[default]", vars, date);
      if (n == "tool_use") tool_use = e["template"].get<std::string>();
    }
    if (!out)
      throw Error(cfg_name + ": chat_template has no template named 'default' (it has: " + names + ")",
                  "set chat_template: to a file holding the template to use");
    if (!tool_use.empty()) out->tool_use_ = parse(tool_use, cfg_name + ":chat_template[tool_use]");
    return out;
  }
  if (auto text = read_text(dir / "chat_template.jinja")) return from_source(*text, (dir / "chat_template.jinja").string(), vars, date);
  return std::nullopt;
}

std::string ChatTemplate::date_pin() const {
  if (date_) return *date_;
  if (source_.find("strftime_now") == std::string::npos) return "";
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

bool ChatTemplate::has_generation_blocks() const { return default_ && default_->has_generation_blocks(); }

ChatTemplate::Rendering ChatTemplate::render(const nlohmann::json& messages, size_t count, const nlohmann::json& tools,
                                             bool add_generation_prompt, const std::string& where) const {
  nlohmann::json ctx = vars_;
  if (!tools.is_null()) ctx["tools"] = tools;
  ctx["add_generation_prompt"] = add_generation_prompt;
  const jinja::Template& t = !tools.is_null() && tool_use_ ? *tool_use_ : *default_;
  jinja::RenderOptions o;
  o.date = date_;
  try {
    jinja::Rendered out = t.render(ctx, messages, count, o);
    return {std::move(out.text), std::move(out.generation_spans)};
  } catch (const jinja::Error& e) {
    if (e.kind == jinja::Error::Kind::kRaised) throw RecordError(where, std::string("the chat template raised: ") + e.what());
    throw RecordError(where, std::string("the chat template failed: ") + e.what());
  }
}

RenderedRecord render_conversation(const ChatTemplate& t, const Record& r, TrainOn train_on) {
  ChatTemplate::Rendering full = t.render(r.messages, r.tools, false, r.where);
  RenderedRecord out;
  out.text = std::move(full.text);
  if (train_on == TrainOn::kAll) {
    if (!out.text.empty()) out.trained.push_back({0, out.text.size()});
    return out;
  }
  // The assistant messages whose turns are trained.
  std::vector<size_t> assistants, chosen;
  for (size_t i = 0; i < r.messages.size(); ++i)
    if (r.messages[i].value("role", "") == "assistant") assistants.push_back(i);
  for (size_t i : assistants)
    if (i >= r.completion_start) chosen.push_back(i);
  if (train_on == TrainOn::kLastAssistant && !chosen.empty()) chosen = {chosen.back()};
  if (t.has_generation_blocks()) {
    const auto& g = full.generation_spans;
    if (g.size() == assistants.size()) {  // the k-th block is the k-th assistant message
      for (size_t k = 0; k < assistants.size(); ++k)
        if (std::find(chosen.begin(), chosen.end(), assistants[k]) != chosen.end()) out.trained.push_back(g[k]);
    } else if (train_on == TrainOn::kLastAssistant) {
      if (!g.empty()) out.trained.push_back(g.back());
    } else {
      out.trained = g;
    }
  } else {
    for (size_t i : chosen) out.trained.push_back(turn_by_prefixes(t, r, i, out.text));
  }
  return out;
}

}  // namespace air::train
