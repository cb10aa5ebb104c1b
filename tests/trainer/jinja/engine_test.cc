// Unit tests of the Jinja subset chat templates use. cases.json holds templates with the text (or the kind of
// error) Python's jinja2 gives for them, configured as transformers configures it; tests/e2e/jinja_templates.sh
// re-renders the same file with jinja2 so the expectations cannot drift from it.
#include <catch2/catch.hpp>

#include <atomic>
#include <fstream>
#include <thread>
#include <sstream>

#include "trainer/jinja/jinja.h"

using air::jinja::Error;
using air::jinja::RenderOptions;
using air::jinja::Rendered;
using air::jinja::Template;

namespace {

const nlohmann::ordered_json& cases() {
  static const nlohmann::ordered_json all = [] {
    std::ifstream in(std::string(AIR_TEST_DATA_DIR) + "/trainer/jinja/cases.json");
    REQUIRE(in.good());
    return nlohmann::ordered_json::parse(in);
  }();
  return all;
}

const char* kind_name(Error::Kind k) {
  switch (k) {
    case Error::Kind::kSyntax: return "syntax";
    case Error::Kind::kUnsupported: return "unsupported";
    case Error::Kind::kRaised: return "raised";
    case Error::Kind::kRuntime: return "runtime";
  }
  return "?";
}

void check_group(const std::string& group) {
  const auto& list = cases().at(group);
  REQUIRE(!list.empty());
  RenderOptions options;
  options.date = "2026-12-06";
  for (const auto& c : list) {
    std::string source = c["template"];
    INFO("template: " << source);
    std::string got_kind, got_message;
    Rendered r;
    try {
      r = Template::parse(source).render(c["context"], options);
    } catch (const Error& e) {
      got_kind = kind_name(e.kind);
      got_message = e.what();
    }
    if (c.contains("error")) {
      INFO("jinja2: " << c["message"].get<std::string>());
      CHECK(got_kind == c["error"].get<std::string>());
      if (c["error"] == "raised") CHECK(got_message.find(c["message"].get<std::string>()) != std::string::npos);
    } else {
      INFO("error: " << got_message);
      CHECK(got_kind.empty());
      CHECK(r.text == c["text"].get<std::string>());
      std::vector<std::pair<size_t, size_t>> spans;
      if (c.contains("spans"))
        for (const auto& s : c["spans"]) spans.emplace_back(s[0], s[1]);
      CHECK(r.generation_spans == spans);
    }
  }
}

std::string error_of(const std::string& source, const nlohmann::json& context = nlohmann::json::object()) {
  try {
    Template::parse(source, "t.jinja").render(context);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("whitespace control, trim_blocks, lstrip_blocks, raw, newlines") { check_group("whitespace"); }
TEST_CASE("literals and Python's str() / repr() of values") { check_group("literals"); }
TEST_CASE("operators with Python's semantics") { check_group("operators"); }
TEST_CASE("attribute, item and slice access") { check_group("access"); }
TEST_CASE("Undefined as jinja2's default Undefined") { check_group("undefined"); }
TEST_CASE("if, for (loop variables, else, filters, break, continue), range") { check_group("control"); }
TEST_CASE("set, namespace, scoping, macros, call and filter blocks") { check_group("set"); }
TEST_CASE("filters") { check_group("filters"); }
TEST_CASE("tojson as transformers defines it") { check_group("tojson"); }
TEST_CASE("tests") { check_group("tests"); }
TEST_CASE("string, dict and list methods") { check_group("methods"); }
TEST_CASE("raise_exception, strftime_now and runtime errors") { check_group("errors"); }
TEST_CASE("generation blocks record byte spans") { check_group("generation"); }
TEST_CASE("printf-style formatting, tuples, case mapping beyond ASCII") { check_group("format"); }
TEST_CASE("generators: always true, one pass, errors when consumed") { check_group("generators"); }

TEST_CASE("errors name the template's line and column, with the line and a caret") {
  CHECK(error_of("a\n{% if x %}\n{{ x | nofilter }}{% endif %}") ==
        "t.jinja:3:8: syntax error: No filter named 'nofilter'.\n"
        "    {{ x | nofilter }}{% endif %}\n"
        "           ^");
  CHECK(error_of("line1\n  {% include 'x' %}") ==
        "t.jinja:2:6: unsupported: the '{% include %}' tag (valid Jinja that air's template engine does not "
        "implement)\n"
        "      {% include 'x' %}\n"
        "         ^");
  CHECK(error_of("{{ m.content + 'x' }}", {{"m", nlohmann::json::object()}}) ==
        "t.jinja:1:6: error: 'dict object' has no attribute 'content'\n"
        "    {{ m.content + 'x' }}\n"
        "         ^");
  CHECK(error_of("{% for x in y %}") ==
        "t.jinja:1:17: syntax error: unexpected end of template; jinja was looking for 'endfor' or 'else'. The "
        "innermost block that needs to be closed is 'for'.\n"
        "    {% for x in y %}\n"
        "                    ^");
}

TEST_CASE("raise_exception is the record's error: kind kRaised with the template's message") {
  try {
    Template::parse("\n\n  {{ raise_exception('Conversation roles must alternate') }}", "t.jinja").render(nlohmann::json::object());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind == Error::Kind::kRaised);
    CHECK(e.line == 3);
    CHECK(e.column == 6);
    CHECK(std::string(e.what()) == "t.jinja:3:6: raised: Conversation roles must alternate");
  }
}

TEST_CASE("a feature the engine lacks is kUnsupported at parse time, naming the feature") {
  for (const char* source : {"{% extends 'base' %}", "{% import 'm' as m %}", "{{ x|truncate(5) }}",
                             "{% for x in y recursive %}{% endfor %}", "{% with a = 1 %}{% endwith %}"}) {
    INFO(source);
    try {
      Template::parse(source);
      FAIL("parsed");
    } catch (const Error& e) {
      CHECK(e.kind == Error::Kind::kUnsupported);
      CHECK(e.line == 1);
    }
  }
}

TEST_CASE("strftime_now formats the pinned date, and a bad pinned date is an error") {
  auto t = Template::parse("{{ strftime_now('%d %b %Y') }}");
  RenderOptions o;
  o.date = "2024-07-26";
  CHECK(t.render(nlohmann::json::object(), o).text == "26 Jul 2024");
  o.date = "July";
  CHECK_THROWS_AS(t.render(nlohmann::json::object(), o), Error);
  // Unpinned: today's date, whatever it is, in the same shape.
  CHECK(t.render(nlohmann::json::object()).text.size() == 11);
}

TEST_CASE("one parsed template renders from many threads at once") {
  auto t = Template::parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "<{{ m.role }}>{{ m.content|trim }}{% endfor %}{{ ns.n }}");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 500; ++i) {
        nlohmann::json ctx = {{"messages", {{{"role", "user"}, {"content", " t" + std::to_string(k) + " "}},
                                            {{"role", "assistant"}, {"content", std::to_string(i)}}}}};
        if (t.render(ctx).text != "<user>t" + std::to_string(k) + "<assistant>" + std::to_string(i) + "2") ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
}

TEST_CASE("ordered_json contexts keep key order for tojson and items, as Python dicts do") {
  auto t = Template::parse("{{ tool|tojson }} {% for k, v in tool.items() %}{{ k }}{% endfor %}");
  auto ordered = nlohmann::ordered_json::parse(R"({"tool": {"name": "f", "description": "d", "args": [1]}})");
  CHECK(t.render(ordered).text == R"({"name": "f", "description": "d", "args": [1]} namedescriptionargs)");
  // nlohmann::json sorts keys: that is what the caller asked for.
  CHECK(t.render(nlohmann::json::parse(ordered.dump())).text == R"({"args": [1], "description": "d", "name": "f"} argsdescriptionname)");
}

TEST_CASE("integers past 64 bits are kUnsupported, never wrapped") {
  for (const char* source : {"{{ 9223372036854775807 + 1 }}", "{{ 2 ** 64 }}", "{{ -9223372036854775807 - 2 }}",
                             "{{ 3037000500 * 3037000500 }}", "{{ 99999999999999999999 }}", "{{ 1e300|int }}"}) {
    INFO(source);
    try {
      Template::parse(source).render(nlohmann::json::object());
      FAIL("rendered");
    } catch (const Error& e) {
      CHECK(e.kind == Error::Kind::kUnsupported);
    }
  }
  CHECK(Template::parse("{{ 2 ** 62 }} {{ (-1) ** 1000001 }} {{ 1 ** 99999999999 }}").render(nlohmann::json::object()).text ==
        "4611686018427387904 -1 1");
}

TEST_CASE("hostile templates end in an Error, not a crash") {
  std::string parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  std::string ifs;
  for (int i = 0; i < 2000; ++i) ifs += "{% if 1 %}";
  for (int i = 0; i < 2000; ++i) ifs += "{% endif %}";
  CHECK_THROWS_AS(Template::parse(parens), Error);
  CHECK_THROWS_AS(Template::parse(ifs), Error);
  auto recurse = Template::parse("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  CHECK_THROWS_AS(recurse.render(nlohmann::json::object()), Error);
  CHECK_THROWS_AS(Template::parse("{{ 'ab' * 10000000000 }}").render(nlohmann::json::object()), Error);
  CHECK_THROWS_AS(Template::parse("{% for i in range(1000000) %}{% endfor %}").render(nlohmann::json::object()), Error);
}

TEST_CASE("a prefix of the messages rendered in place equals the same messages given in the context") {
  Template t = Template::parse(
      "{% for m in messages %}[{{ loop.index }}/{{ messages|length }} {{ m.role }}: {{ m.content }}]{% endfor %}"
      "{% if add_generation_prompt %}<{{ bos_token }}>{% endif %}");
  const nlohmann::json messages = nlohmann::json::parse(
      R"([{"role": "system", "content": "s"}, {"role": "user", "content": "u {{ x }}"}, {"role": "assistant", "content": "a"}])");
  for (size_t count = 0; count <= 4; ++count) {
    nlohmann::json whole = {{"bos_token", "B"}, {"add_generation_prompt", count % 2 == 1}};
    const nlohmann::json context = whole;
    whole["messages"] = nlohmann::json::array();
    for (size_t k = 0; k < count && k < messages.size(); ++k) whole["messages"].push_back(messages[k]);
    CHECK(t.render(context, messages, count).text == t.render(whole).text);
  }
  CHECK(t.render(nlohmann::json::object(), messages, 2).text == "[1/2 system: s][2/2 user: u {{ x }}]");
  // The list given beside the context wins over a `messages` inside it; a list is required.
  CHECK(t.render(nlohmann::json{{"messages", nlohmann::json::array()}}, messages, 1).text == "[1/1 system: s]");
  CHECK_THROWS_AS(t.render(nlohmann::json::object(), nlohmann::json::object(), 1), Error);
}
