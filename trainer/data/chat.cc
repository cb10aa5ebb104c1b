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

nlohmann::json prefix(const nlohmann::json& messages, size_t n) {
  return nlohmann::json(std::vector<nlohmann::json>(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(n)));
}

// The span of assistant message i in the full rendering `full` by prefix rendering (chat.h).
std::pair<size_t, size_t> turn_by_prefixes(const ChatTemplate& t, const Record& r, size_t i, const std::string& full) {
  const std::string before = t.render(prefix(r.messages, i), r.tools, true, r.where).text;
  if (!starts_with(full, before))
    throw RecordError(r.where, "cannot find assistant message " + std::to_string(i) +
                                   " in the rendering: the chat template renders the conversation before it differently "
                                   "when more follows (use a template with {% generation %} blocks, or train_on: all)");
  const size_t start = before.size();
  const std::string upto = t.render(prefix(r.messages, i + 1), r.tools, false, r.where).text;
  size_t end;
  if (starts_with(full, upto) && upto.size() >= start) {
    end = upto.size();
  } else {
    // The template rewrites this turn once more follows: the turn ends after its end-of-turn marker, the text
    // `upto` writes after the message's content, found in `full` after that content.
    // Reasoning templates (Qwen3 and the like) render only what follows "</think>" in earlier turns.
    std::string raw = content_text(r.messages[i]);
    if (size_t think = raw.rfind("</think>"); think != std::string::npos) raw = raw.substr(think + 8);
    const std::string content = trimmed(raw);
    const std::string tail = upto.size() > start ? upto.substr(start) : "";
    const size_t in_tail = content.empty() ? std::string::npos : tail.rfind(content);
    const std::string marker = trimmed(in_tail == std::string::npos ? "" : tail.substr(in_tail + content.size()));
    const size_t at = content.empty() ? start : full.find(content, start);
    const size_t m = at == std::string::npos || marker.empty() ? std::string::npos : full.find(marker, at + content.size());
    if (m == std::string::npos)
      throw RecordError(r.where, "cannot find the end of assistant message " + std::to_string(i) +
                                     " in the rendering (the chat template rewrites it when more follows); use a "
                                     "template with {% generation %} blocks, or train_on: all");
    end = m + marker.size();
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

ChatTemplate::Rendering ChatTemplate::render(const nlohmann::json& messages, const nlohmann::json& tools,
                                             bool add_generation_prompt, const std::string& where) const {
  nlohmann::json ctx = vars_;
  ctx["messages"] = messages;
  if (!tools.is_null()) ctx["tools"] = tools;
  ctx["add_generation_prompt"] = add_generation_prompt;
  const jinja::Template& t = !tools.is_null() && tool_use_ ? *tool_use_ : *default_;
  jinja::RenderOptions o;
  o.date = date_;
  try {
    jinja::Rendered out = t.render(ctx, o);
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
