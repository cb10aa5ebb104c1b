// Chat data: templates rendered through our engine, trained spans (prefix rendering and {% generation %}),
// token masks, train_on, skipped rows, and a property test over random conversations whose expected
// rendering and spans the test computes itself. Tokenizer: examples/tiny_model (byte-level BPE).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/base/error.h"
#include "trainer/data/chat.h"
#include "trainer/data/dataset.h"
#include "trainer/tokenizer/tokenizer.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

// A template in the shape of the real ones: BOS, a role header per message, the content, an end-of-turn
// token (the tiny tokenizer's EOS) and a newline; the generation prompt is the assistant header.
const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}{{ '<' + m['role'] + '>\\n' + m['content'] + eos_token + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<assistant>\\n' }}{% endif %}";
// The same with the assistant turn inside {% generation %} (TRL's *_training.jinja style).
const char* kGenerationTemplate =
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'assistant' %}{{ '<assistant>\\n' }}{% generation %}"
    "{{ m['content'] + eos_token }}{% endgeneration %}{{ '\\n' }}{% else %}{{ '<' + m['role'] + '>\\n' + m['content'] + "
    "eos_token + '\\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<assistant>\\n' }}{% endif %}";
const char* kBos = "<|begin_of_text|>";
const char* kEos = "<|end_of_text|>";

nlohmann::json specials() { return {{"bos_token", kBos}, {"eos_token", kEos}}; }

std::shared_ptr<const Tokenizer> tiny_tokenizer() {
  static auto tok = std::make_shared<const Tokenizer>(
      Tokenizer::from_file(std::string(AIR_TEST_DATA_DIR) + "/../examples/tiny_model/tokenizer.json"));
  return tok;
}

TextEncoder encoder() {
  TextEncoder e;
  auto tok = tiny_tokenizer();
  e.tokenizer = tok;
  e.encode = [tok](const std::string& s) { return tok->encode(s, false); };
  e.bos = tok->token_to_id(kBos);
  e.eos = *tok->token_to_id(kEos);
  e.pad = *tok->token_to_id("<|pad|>");
  return e;
}

Record conversation(nlohmann::json messages, size_t completion_start = 0) {
  Record r;
  r.format = DataFormat::kMessages;
  r.messages = std::move(messages);
  r.completion_start = completion_start;
  r.where = "test:1";
  return r;
}

nlohmann::json msg(const std::string& role, const std::string& content) { return {{"role", role}, {"content", content}}; }

std::vector<std::string> span_texts(const RenderedRecord& rr) {
  std::vector<std::string> out;
  for (auto [a, b] : rr.trained) out.push_back(rr.text.substr(a, b - a));
  return out;
}

// The decoded text of each run of trained tokens.
std::vector<std::string> trained_runs(const Example& e) {
  std::vector<std::string> out;
  for (size_t i = 0; i < e.ids.size();) {
    if (!e.trained(i)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < e.ids.size() && e.trained(j)) ++j;
    out.push_back(tiny_tokenizer()->decode(std::vector<int32_t>(e.ids.begin() + static_cast<long>(i), e.ids.begin() + static_cast<long>(j))));
    i = j;
  }
  return out;
}

}  // namespace

TEST_CASE("train_on assistant: each assistant content and its end-of-turn token, nothing else") {
  ChatTemplate t = ChatTemplate::from_source(kTemplate, "test-template", specials(), std::nullopt);
  Record r = conversation({msg("system", "Be brief."), msg("user", "Hi there"), msg("assistant", "Hello!"),
                           msg("user", "2+2?"), msg("assistant", "4")});
  RenderedRecord rr = render_conversation(t, r, TrainOn::kAssistant);
  CHECK(rr.text == std::string(kBos) + "<system>\nBe brief." + kEos + "\n<user>\nHi there" + kEos + "\n<assistant>\nHello!" +
                       kEos + "\n<user>\n2+2?" + kEos + "\n<assistant>\n4" + kEos + "\n");
  CHECK(span_texts(rr) == std::vector<std::string>{std::string("Hello!") + kEos, std::string("4") + kEos});

  TextEncoder enc = encoder();
  ExampleBuilder b(enc, &t, TrainOn::kAssistant);
  std::string text;
  Example e = b.build(r, &text);
  CHECK(text == rr.text);
  CHECK(e.ids == tiny_tokenizer()->encode(rr.text, false));  // no second BOS: the template writes it
  CHECK(e.ids[0] == *enc.bos);
  CHECK(e.ids[1] != *enc.bos);
  CHECK(trained_runs(e) == std::vector<std::string>{std::string("Hello!") + kEos, std::string("4") + kEos});
  // Every EOS after a system or user message is masked, every one after an assistant message trained.
  std::vector<bool> eos_trained;
  for (size_t i = 0; i < e.ids.size(); ++i)
    if (e.ids[i] == enc.eos) eos_trained.push_back(e.trained(i));
  CHECK(eos_trained == std::vector<bool>{false, false, true, false, true});
}

TEST_CASE("train_on last_assistant and all") {
  ChatTemplate t = ChatTemplate::from_source(kTemplate, "test-template", specials(), std::nullopt);
  Record r = conversation({msg("user", "a"), msg("assistant", "b"), msg("user", "c"), msg("assistant", "d")});
  CHECK(span_texts(render_conversation(t, r, TrainOn::kLastAssistant)) == std::vector<std::string>{std::string("d") + kEos});
  RenderedRecord all = render_conversation(t, r, TrainOn::kAll);
  CHECK(span_texts(all) == std::vector<std::string>{all.text});
}

TEST_CASE("{% generation %} blocks give the spans where a template has them") {
  ChatTemplate t = ChatTemplate::from_source(kGenerationTemplate, "gen-template", specials(), std::nullopt);
  REQUIRE(t.has_generation_blocks());
  Record r = conversation({msg("user", "a"), msg("assistant", "b b"), msg("user", "c"), msg("assistant", "d")});
  CHECK(span_texts(render_conversation(t, r, TrainOn::kAssistant)) ==
        std::vector<std::string>{std::string("b b") + kEos, std::string("d") + kEos});
  CHECK(span_texts(render_conversation(t, r, TrainOn::kLastAssistant)) == std::vector<std::string>{std::string("d") + kEos});
}

TEST_CASE("templates that render earlier turns differently once more follows: the turns are still found") {
  // In Mistral's shape: the system message joins the user turn only when that is the last message (so A, which
  // ends with a user turn, has it where the whole conversation has not), and a space before each answer.
  const char* mistral =
      "{% if messages[0]['role'] == 'system' %}{% set sys = messages[0]['content'] %}{% set rest = messages[1:] %}"
      "{% else %}{% set rest = messages %}{% endif %}{{ bos_token }}{% for m in rest %}{% if m['role'] == 'user' %}"
      "{% if loop.last and sys is defined %}{{ '[INST] ' + sys + '\\n\\n' + m['content'] + '[/INST]' }}{% else %}"
      "{{ '[INST] ' + m['content'] + '[/INST]' }}{% endif %}{% else %}{{ ' ' + m['content'] + eos_token }}{% endif %}"
      "{% endfor %}";
  ChatTemplate t = ChatTemplate::from_source(mistral, "mistral-shape", specials(), std::nullopt);
  Record r = conversation({msg("system", "Be brief."), msg("user", "2+2?"), msg("assistant", "4"), msg("user", "3+3?"),
                           msg("assistant", "4 and 2")});
  RenderedRecord rr = render_conversation(t, r, TrainOn::kAssistant);
  CHECK(rr.text == std::string(kBos) + "[INST] 2+2?[/INST] 4" + kEos + "[INST] 3+3?[/INST] 4 and 2" + kEos);
  CHECK(span_texts(rr) == std::vector<std::string>{std::string(" 4") + kEos, std::string(" 4 and 2") + kEos});

  // In Phi-3's shape: the conversation ends with eos_token unless a generation prompt follows, so B (ending at
  // this answer) is not a prefix of the whole, which goes on with the next turn's header.
  const char* phi =
      "{% for m in messages %}{{ '<|' + m['role'] + '|>\\n' + m['content'] + '<|end|>\\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}";
  ChatTemplate p = ChatTemplate::from_source(phi, "phi-shape", specials(), std::nullopt);
  Record q = conversation({msg("user", "a"), msg("assistant", "b\n"), msg("user", "c"), msg("assistant", "")});
  RenderedRecord pr = render_conversation(p, q, TrainOn::kAssistant);
  CHECK(span_texts(pr) == std::vector<std::string>{"b\n<|end|>", std::string("<|end|>\n") + kEos});
  // A template that writes nothing of an earlier answer's end where the whole conversation goes on is an error.
  ChatTemplate bad = ChatTemplate::from_source(
      "{% for m in messages %}{% if loop.last and m['role'] == 'assistant' %}{{ m['content'] + '<|fin|>' }}{% else %}"
      "{{ m['content'] + '|' }}{% endif %}"
      "{% endfor %}",
      "bad", specials(), std::nullopt);
  CHECK_THROWS_WITH(render_conversation(bad, conversation({msg("user", "a"), msg("assistant", "b"), msg("user", "c")}),
                                        TrainOn::kAssistant),
                    Catch::Contains("cannot find the end of assistant message 1"));
}

TEST_CASE("prompt / completion with a template: one user and one assistant turn, the completion trained") {
  ChatTemplate t = ChatTemplate::from_source(kTemplate, "test-template", specials(), std::nullopt);
  TextEncoder enc = encoder();
  ExampleBuilder b(enc, &t, TrainOn::kAssistant);
  Record r;
  r.format = DataFormat::kPromptCompletion;
  r.prompt = "Capital of France?";
  r.completion = "Paris.";
  std::string text;
  Example e = b.build(r, &text);
  CHECK(text == std::string(kBos) + "<user>\nCapital of France?" + kEos + "\n<assistant>\nParis." + kEos + "\n");
  CHECK(trained_runs(e) == std::vector<std::string>{std::string("Paris.") + kEos});
  // A conversational pair trains only the completion's assistant messages, not an assistant turn in the prompt.
  Record c = conversation({msg("user", "a"), msg("assistant", "b"), msg("user", "c"), msg("assistant", "d")}, 3);
  c.format = DataFormat::kPromptCompletion;
  CHECK(trained_runs(b.build(c)) == std::vector<std::string>{std::string("d") + kEos});
}

TEST_CASE("text records train every token - Alpaca records are built as before") {
  TextEncoder enc = encoder();
  ExampleBuilder b(enc, nullptr, TrainOn::kAssistant);
  Record t;
  t.format = DataFormat::kText;
  t.text = "plain words";
  Example e = b.build(t);
  CHECK(e.ids.front() == *enc.bos);
  CHECK(e.ids.back() == enc.eos);
  CHECK(e.targets_within(static_cast<int64_t>(e.ids.size())) == static_cast<int64_t>(e.ids.size()) - 1);
  Record a;
  a.format = DataFormat::kAlpaca;
  a.alpaca = {"Hi.", "", "ok"};
  Example ea = b.build(a);
  Example ref = make_example(a.alpaca, enc);
  CHECK(ea.ids == ref.ids);
  CHECK(ea.prompt_len == ref.prompt_len);
  CHECK(ea.mask.empty());
}

TEST_CASE("conversations without a template are an error that says what to do") {
  TextEncoder enc = encoder();
  ExampleBuilder b(enc, nullptr, TrainOn::kAssistant);
  try {
    b.build(conversation({msg("user", "a"), msg("assistant", "b")}));
    FAIL("no error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()) == "messages records need a chat template, and the tokenizer has none");
    CHECK(e.hint().find("chat_template:") != std::string::npos);
  }
}

TEST_CASE("a template that raises is that record's error - bad_records: skip counts it - untrained rows are skipped") {
  fs::path dir = fs::temp_directory_path() / ("air-chat-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string data = (dir / "conv.jsonl").string();
  std::ofstream(data) << R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
{"messages": [{"role": "assistant", "content": "first"}]}
{"messages": [{"role": "user", "content": "only a question"}]}
{"messages": [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]}
)";
  const char* strict =
      "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Conversation must start with the user') }}{% endif %}";
  ChatTemplate t = ChatTemplate::from_source(std::string(strict) + kTemplate, "strict", specials(), std::nullopt);
  TextEncoder enc = encoder();
  ExampleBuilder b(enc, &t, TrainOn::kAssistant);
  DataSettings s;
  s.max_seq_len = 64;
  std::ostringstream log;
  try {
    load_examples({data}, s, b, log);
    FAIL("no error");
  } catch (const air::Error& e) {
    const std::string m = e.what();
    CHECK(m.rfind(data + ":2: the chat template raised: ", 0) == 0);
    CHECK(m.find("Conversation must start with the user") != std::string::npos);
  }
  s.skip_bad = true;
  LoadedData d = load_examples({data}, s, b, log);
  CHECK(d.examples.size() == 2);
  CHECK(d.stats.skipped_bad == 1);
  CHECK(d.stats.skipped_untrained == 1);  // the user-only record has nothing to train
  CHECK(describe(d.stats, 64).find("skipped: 1 bad records, 1 with no trained token") != std::string::npos);
  // Truncation: with room for only the prompt, no row has a trained token left.
  s.max_seq_len = 4;
  CHECK(load_examples({data}, s, b, log).examples.empty());
  fs::remove_all(dir);
}

TEST_CASE("mask_from_spans: a token is trained when its whole byte range lies inside a span") {
  const std::vector<std::pair<uint32_t, uint32_t>> offsets = {{0, 0}, {0, 3}, {3, 5}, {5, 9}, {9, 10}, {10, 12}};
  CHECK(mask_from_spans(offsets, {{3, 9}}) == std::vector<uint8_t>{0, 0, 1, 1, 0, 0});
  CHECK(mask_from_spans(offsets, {{4, 9}, {9, 12}}) == std::vector<uint8_t>{0, 0, 0, 1, 1, 1});
  CHECK(mask_from_spans(offsets, {}) == std::vector<uint8_t>{0, 0, 0, 0, 0, 0});
}

TEST_CASE("property: random conversations render as expected, spans are exactly the assistant turns") {
  ChatTemplate t = ChatTemplate::from_source(kTemplate, "test-template", specials(), std::nullopt);
  TextEncoder enc = encoder();
  const std::vector<std::string> pieces = {"hello", " world", "{{ not_a_var }}", "{% if x %}", "über", "日本語", "\n\n",
                                           "  spaced  ", "code: { a: [1, 2] }", "<assistant>", "tab\there", "émoji 🙂", ""};
  std::mt19937 rng(1234);
  auto content = [&] {
    std::string s;
    const int n = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) s += pieces[rng() % pieces.size()];
    return s;
  };
  for (int iter = 0; iter < 200; ++iter) {
    nlohmann::json messages = nlohmann::json::array();
    if (rng() % 2) messages.push_back(msg("system", content()));
    const int turns = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < turns; ++k) {
      messages.push_back(msg("user", content()));
      if (rng() % 4 == 0) messages.push_back(msg("tool", content()));
      messages.push_back(msg("assistant", content()));
    }
    const TrainOn on = rng() % 3 == 0 ? TrainOn::kLastAssistant : TrainOn::kAssistant;
    // What the test expects, computed from the template's shape.
    std::string expect = kBos;
    Spans spans;
    for (size_t i = 0; i < messages.size(); ++i) {
      const std::string role = messages[i]["role"], c = messages[i]["content"];
      expect += "<" + role + ">\n";
      const size_t start = expect.size();
      expect += c + kEos;
      if (role == "assistant") spans.push_back({start, expect.size()});
      expect += "\n";
    }
    if (on == TrainOn::kLastAssistant) spans = {spans.back()};
    RenderedRecord rr = render_conversation(t, conversation(messages), on);
    REQUIRE(rr.text == expect);
    REQUIRE(rr.trained == spans);
    // Tokens: trained exactly when inside a span (checked against the offsets directly), and every
    // assistant turn's end-of-turn token is trained.
    Tokenizer::Encoding tk = tiny_tokenizer()->encode_with_offsets(rr.text, false);
    Example e = ExampleBuilder(enc, &t, on).build(conversation(messages));
    REQUIRE(e.ids == tk.ids);
    size_t eos_trained = 0;
    for (size_t i = 0; i < tk.ids.size(); ++i) {
      const auto [a, b] = tk.offsets[i];
      bool inside = false;
      for (auto [s0, s1] : spans) inside |= a < b && s0 <= a && b <= s1;
      REQUIRE(e.trained(i) == inside);
      if (tk.ids[i] == enc.eos && e.trained(i)) ++eos_trained;
    }
    REQUIRE(eos_trained == spans.size());
  }
}
