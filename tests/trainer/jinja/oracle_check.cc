// Renders a chat template over a corpus of contexts (JSONL, one render's variables a line) and compares
// each result with what Python's jinja2 produced (tests/trainer/jinja/render_jinja2.py): the text byte for
// byte and the generation spans, or the same kind of error. Used by tests/e2e/jinja_templates.sh.
//
//   jinja_oracle_check TEMPLATE CORPUS.jsonl EXPECTED.jsonl [--date YYYY-MM-DD]
//   jinja_oracle_check --bench TEMPLATE CORPUS.jsonl SECONDS   (renders per second, for bench/)
//   jinja_oracle_check --cases CASES.json   (many templates, each with its context and jinja2's result)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "trainer/jinja/jinja.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

const char* kind_name(air::jinja::Error::Kind k) {
  switch (k) {
    case air::jinja::Error::Kind::kSyntax: return "syntax";
    case air::jinja::Error::Kind::kUnsupported: return "unsupported";
    case air::jinja::Error::Kind::kRaised: return "raised";
    case air::jinja::Error::Kind::kRuntime: return "runtime";
  }
  return "?";
}

// The first differing byte, with some context on both sides.
std::string show_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i > 40 ? i - 40 : 0;
  nlohmann::json w = want.substr(from, 80), g = got.substr(from, 80);
  return "first difference at byte " + std::to_string(i) + " (lengths " + std::to_string(want.size()) + " and " +
         std::to_string(got.size()) + ")\n    jinja2: " + w.dump() + "\n    ours:   " + g.dump();
}

int bench(const std::string& template_path, const std::string& corpus_path, double seconds) {
  auto tmpl = air::jinja::Template::parse(read_file(template_path), template_path);
  std::vector<nlohmann::ordered_json> contexts;
  for (const auto& line : read_lines(corpus_path)) contexts.push_back(nlohmann::ordered_json::parse(line));
  air::jinja::RenderOptions options;
  options.date = "2026-12-06";
  size_t renders = 0, bytes = 0;
  auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (const auto& c : contexts) {
      try {
        bytes += tmpl.render(c, options).text.size();
      } catch (const air::jinja::Error&) {
      }
      ++renders;
    }
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::printf("%zu renders in %.3f s: %.0f renders/s (%zu bytes)\n", renders, elapsed, renders / elapsed, bytes);
  return 0;
}

// cases.json's form: {group: [{template, context, text[, spans] | error[, message]}]}.
int check_cases(const std::string& path) {
  auto groups = nlohmann::ordered_json::parse(read_file(path));
  air::jinja::RenderOptions options;
  options.date = "2026-12-06";
  int total = 0, bad = 0;
  for (auto& [group, list] : groups.items()) {
    for (const auto& c : list) {
      ++total;
      std::string kind, message, text;
      std::vector<std::pair<size_t, size_t>> spans;
      try {
        auto r = air::jinja::Template::parse(c["template"].get<std::string>(), "case").render(c["context"], options);
        text = std::move(r.text);
        spans = std::move(r.generation_spans);
      } catch (const air::jinja::Error& e) {
        kind = kind_name(e.kind);
        message = e.what();
      }
      std::string problem;
      if (c.contains("error")) {
        if (kind != c["error"].get<std::string>())
          problem = "jinja2 raised " + c["error"].get<std::string>() + " (" + c.value("message", "") + "), ours: " +
                    (kind.empty() ? "rendered " + nlohmann::json(text).dump() : message);
      } else if (!kind.empty()) {
        problem = "jinja2 rendered " + c["text"].dump() + ", ours raised " + message;
      } else if (text != c["text"].get<std::string>()) {
        problem = show_difference(c["text"], text);
      }
      if (!problem.empty() && ++bad <= 200)
        std::cerr << group << ": " << nlohmann::json(c["template"]).dump() << ": " << problem << "\n";
    }
  }
  std::printf("%s: %d cases, %d match, %d differ\n", path.c_str(), total, total - bad, bad);
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args[0] == "--bench" && args.size() == 4) return bench(args[1], args[2], std::stod(args[3]));
    if (!args.empty() && args[0] == "--cases" && args.size() == 2) return check_cases(args[1]);
    air::jinja::RenderOptions options;
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--date") {
        options.date = args[i + 1];
        args.erase(args.begin() + i, args.begin() + i + 2);
        break;
      }
    }
    if (args.size() != 3) {
      std::cerr << "usage: jinja_oracle_check TEMPLATE CORPUS.jsonl EXPECTED.jsonl [--date YYYY-MM-DD]\n";
      return 2;
    }
    std::string source = read_file(args[0]);
    auto corpus = read_lines(args[1]);
    auto expected = read_lines(args[2]);
    if (corpus.size() != expected.size()) {
      std::cerr << "error: " << corpus.size() << " contexts but " << expected.size() << " expected results\n";
      return 2;
    }
    std::optional<air::jinja::Template> tmpl;
    std::string parse_error;
    const char* parse_kind = nullptr;
    try {
      tmpl.emplace(air::jinja::Template::parse(source, args[0]));
    } catch (const air::jinja::Error& e) {
      parse_error = e.what();
      parse_kind = kind_name(e.kind);
    }
    int failures = 0, texts = 0, errors = 0;
    for (size_t i = 0; i < corpus.size(); ++i) {
      auto context = nlohmann::ordered_json::parse(corpus[i]);
      auto want = nlohmann::json::parse(expected[i]);
      std::string got_text, got_error, got_kind;
      std::vector<std::pair<size_t, size_t>> got_spans;
      if (!tmpl) {
        got_kind = parse_kind;
        got_error = parse_error;
      } else {
        try {
          auto r = tmpl->render(context, options);
          got_text = std::move(r.text);
          got_spans = std::move(r.generation_spans);
        } catch (const air::jinja::Error& e) {
          got_kind = kind_name(e.kind);
          got_error = e.what();
        }
      }
      std::string problem;
      if (want.contains("error")) {
        ++errors;
        std::string kind = want["error"];
        if (got_kind.empty()) problem = "jinja2 raised " + kind + " (" + want.value("message", "") + ") but we rendered";
        else if (got_kind != kind) problem = "jinja2 raised " + kind + " (" + want.value("message", "") + "), we raised " + got_error;
        else if (kind == "raised" && got_error.find(want.value("message", "")) == std::string::npos)
          problem = "raised message differs: jinja2 '" + want.value("message", "") + "', ours '" + got_error + "'";
      } else {
        ++texts;
        std::string text = want["text"];
        if (!got_kind.empty()) problem = "jinja2 rendered, we raised " + got_error;
        else if (text != got_text) problem = show_difference(text, got_text);
        else {
          std::vector<std::pair<size_t, size_t>> spans;
          for (const auto& s : want.value("spans", nlohmann::json::array())) spans.emplace_back(s[0], s[1]);
          if (spans != got_spans) problem = "generation spans differ";
        }
      }
      if (!problem.empty()) {
        ++failures;
        if (failures <= 10) std::cerr << args[0] << ": context " << i + 1 << ": " << problem << "\n";
      }
    }
    std::printf("%s: %d contexts (%d texts, %d errors): %d match, %d differ\n", args[0].c_str(),
                static_cast<int>(corpus.size()), texts, errors, static_cast<int>(corpus.size()) - failures, failures);
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
