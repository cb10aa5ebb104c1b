// Record formats: detection per file, forcing, the located errors (file:line and field), bad_records.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/base/error.h"
#include "trainer/data/records.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

std::string write_tmp(const std::string& name, const std::string& text) {
  fs::path dir = fs::temp_directory_path() / ("air-records-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

std::string error_of(const std::string& path, ReadOptions o = {}) {
  try {
    read_records(path, o);
  } catch (const air::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("formats are detected per file from the first record's keys") {
  auto j = [](const char* s) { return nlohmann::json::parse(s); };
  CHECK(detect_format(j(R"({"messages": [{"role": "user", "content": "hi"}]})")) == DataFormat::kMessages);
  CHECK(detect_format(j(R"({"conversations": [{"from": "human", "value": "hi"}]})")) == DataFormat::kShareGpt);
  CHECK(detect_format(j(R"({"conversations": [{"role": "user", "content": "hi"}]})")) == DataFormat::kMessages);
  CHECK(detect_format(j(R"({"prompt": "a", "completion": "b"})")) == DataFormat::kPromptCompletion);
  CHECK(detect_format(j(R"({"instruction": "a", "input": "", "output": "b"})")) == DataFormat::kAlpaca);
  CHECK(detect_format(j(R"({"text": "plain"})")) == DataFormat::kText);
  CHECK_FALSE(detect_format(j(R"({"question": "?"})")).has_value());
}

TEST_CASE("messages keep every field for the template - sharegpt speakers become roles") {
  auto path = write_tmp("mixed.jsonl",
                        R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]}, {"role": "tool", "content": "4", "tool_call_id": "c1"}, {"role": "assistant", "content": "4"}], "tools": [{"type": "function", "function": {"name": "add"}}]})"
                        "\n\n");
  ReadResult r = read_records(path, {});
  REQUIRE(r.format == DataFormat::kMessages);
  REQUIRE(r.records.size() == 1);
  const Record& rec = r.records[0];
  REQUIRE(rec.messages.size() == 5);
  CHECK(rec.messages[2]["tool_calls"][0]["function"]["name"] == "add");
  CHECK(rec.messages[3]["tool_call_id"] == "c1");
  CHECK(rec.tools.is_array());
  CHECK(rec.where == path + ":1");

  auto sg = write_tmp("sg.json", R"([{"conversations": [{"from": "system", "value": "S"}, {"from": "human", "value": "Q"}, {"from": "gpt", "value": "A"}]}])");
  ReadResult s = read_records(sg, {});
  REQUIRE(s.format == DataFormat::kShareGpt);
  CHECK(s.records[0].messages == nlohmann::json::parse(
                                     R"([{"role":"system","content":"S"},{"role":"user","content":"Q"},{"role":"assistant","content":"A"}])"));
}

TEST_CASE("prompt / completion: strings, or message lists on either side") {
  auto path = write_tmp("pc.jsonl", R"({"prompt": "Capital of France?", "completion": " Paris."}
{"prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}], "completion": [{"role": "assistant", "content": "A"}]}
{"prompt": [{"role": "user", "content": "Q"}], "completion": "A"}
)");
  ReadResult r = read_records(path, {});
  REQUIRE(r.records.size() == 3);
  CHECK_FALSE(r.records[0].is_conversation());
  CHECK(r.records[0].completion == " Paris.");
  CHECK(r.records[1].messages.size() == 3);
  CHECK(r.records[1].completion_start == 2);
  CHECK(r.records[2].messages[1] == nlohmann::json::parse(R"({"role": "assistant", "content": "A"})"));
  CHECK(r.records[2].completion_start == 1);
}

TEST_CASE("a bad record is located: file, line and field - every one at once") {
  auto path = write_tmp("bad.jsonl", R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
{"messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "yo"}]}
not json
{"messages": [{"role": "user"}]}
{"messages": "hello"}
)");
  const std::string e = error_of(path);
  CHECK(e == path + ":2: 'messages[1].role' is 'bot', expected system, user, assistant or tool\n" + path +
                 ":3: not valid JSON\n" + path + ":4: missing 'messages[0].content'\n" + path +
                 ":5: 'messages' must be a list of messages, got a string\n4 bad records in " + path);
  ReadOptions skip;
  skip.skip_bad = true;
  ReadResult r = read_records(path, skip);
  CHECK(r.records.size() == 1);
  CHECK(r.skipped == 4);
  REQUIRE(r.skipped_examples.size() == 4);
  CHECK(r.skipped_examples[1] == path + ":3: not valid JSON");
}

TEST_CASE("a forced format checks every record against it - an unknown format says what it saw") {
  auto path = write_tmp("forced.jsonl", R"({"instruction": "a", "output": "b"}
)");
  ReadOptions o;
  o.format = DataFormat::kMessages;
  CHECK(error_of(path, o) == path + ":1: missing 'messages'\n1 bad record in " + path);
  auto odd = write_tmp("odd.jsonl", R"({"question": "?", "answer": "!"}
)");
  CHECK(error_of(odd) == odd + ":1: cannot tell the dataset's format from its first record (keys: answer, question)\n1 bad record in " + odd);
}

TEST_CASE("sharegpt: an unknown speaker names the field") {
  auto path = write_tmp("sg-bad.json", R"([{"conversations": [{"from": "human", "value": "Q"}, {"from": "robot", "value": "A"}]}])");
  CHECK(error_of(path) == path + ": record 0: 'conversations[1].from' is 'robot', expected human, gpt, system or tool\n1 bad record in " + path);
}

TEST_CASE("alpaca records read as before - max_records stops early") {
  auto path = write_tmp("alpaca.json", R"([{"instruction": "Add.", "input": "2 and 3", "output": "5"}, {"instruction": "Hi.", "output": "Hello"}])");
  ReadOptions o;
  o.max_records = 1;
  ReadResult r = read_records(path, o);
  REQUIRE(r.format == DataFormat::kAlpaca);
  REQUIRE(r.records.size() == 1);
  CHECK(r.records[0].alpaca.input == "2 and 3");
  CHECK(read_records(path, {}).records[1].alpaca.input.empty());
}

TEST_CASE("a .json list is read element by element: the same records, located errors, bad records as in JSON Lines") {
  // Strings with brackets, braces, commas, escaped quotes and backslashes must not end an element early.
  std::string list = "[\n", lines;
  for (int i = 0; i < 40000; ++i) {  // more than one chunk (16,384 records)
    std::string rec = R"({"messages": [{"role": "user", "content": "q)" + std::to_string(i) +
                      R"( ]}{[,\" \\"}, {"role": "assistant", "content": "a\n"}]})";
    list += (i ? ",\n  " : "  ") + rec;
    lines += rec + "\n";
  }
  list += "\n]\n";
  const std::string big_json = write_tmp("big.json", list), big_jsonl = write_tmp("big.jsonl", lines);
  ReadResult a = read_records(big_json, {});
  ReadResult b = read_records(big_jsonl, {});
  fs::remove(big_json);
  fs::remove(big_jsonl);
  REQUIRE(a.records.size() == 40000);
  REQUIRE(b.records.size() == 40000);
  CHECK(a.format == DataFormat::kMessages);
  for (size_t i : {size_t{0}, size_t{16383}, size_t{16384}, size_t{39999}}) CHECK(a.records[i].messages == b.records[i].messages);
  CHECK(a.records[39999].messages[0]["content"] == "q39999 ]}{[,\" \\");
  CHECK(a.records[16384].where.size() > 0);
  CHECK(a.records[16384].where.substr(a.records[16384].where.size() - 14) == ": record 16384");

  // The file's structure: errors naming the line.
  CHECK_THAT(error_of(write_tmp("obj.json", R"({"messages": []})")),
             Catch::Contains("obj.json:1: not valid JSON: expected a list of records ('['), found '{'"));
  CHECK_THAT(error_of(write_tmp("trunc.json", "[\n{\"text\": \"a\"},\n{\"text\": \"b")),
             Catch::Contains("trunc.json:3: not valid JSON: the file ends inside record 1 (a truncated file?)"));
  CHECK_THAT(error_of(write_tmp("open.json", "[{\"text\": \"a\"}\n")), Catch::Contains("the list ends without ']' after record 0"));
  CHECK_THAT(error_of(write_tmp("comma.json", "[{\"text\": \"a\"},\n]")), Catch::Contains("comma.json:2: not valid JSON: a ',' before the closing ']'"));
  CHECK_THAT(error_of(write_tmp("sep.json", "[{\"text\": \"a\"} {\"text\": \"b\"}]")), Catch::Contains("expected ',' or ']' after record 0, found '{'"));
  CHECK_THAT(error_of(write_tmp("after.json", "[{\"text\": \"a\"}] x")), Catch::Contains("text after the list of records"));
  CHECK_THAT(error_of(write_tmp("empty.json", "  \n")), Catch::Contains("the file is empty"));
  CHECK(read_records(write_tmp("none.json", " [ ] "), {}).records.empty());
  // A record that is not valid JSON (its brackets balanced) is a bad record, as a bad JSON Lines line is.
  const std::string bad = write_tmp("bad.json", "[{\"text\": \"a\"}, {\"text\": }, {\"text\": \"c\"}, 7]");
  CHECK_THAT(error_of(bad), Catch::Contains(bad + ": record 1: not valid JSON"));
  ReadOptions skip;
  skip.skip_bad = true;
  ReadResult r = read_records(bad, skip);
  CHECK(r.records.size() == 2);
  CHECK(r.skipped == 2);
}

TEST_CASE("a .json list cut anywhere or with a byte changed is an error or records, never a crash or half a list") {
  const std::string list = "[{\"messages\": [{\"role\": \"user\", \"content\": \"a [b] {c} \\\"d\\\\\"}, "
                           "{\"role\": \"assistant\", \"content\": \"e,f\"}]},\n {\"text\": \"g\"}, \"h\", 12, [1, [2]]]\n";
  ReadOptions skip;
  skip.skip_bad = true;
  const size_t end = list.rfind(']') + 1;
  for (size_t cut = 0; cut < end; ++cut) {
    INFO("cut at " << cut);
    const std::string path = write_tmp("cut.json", list.substr(0, cut));
    CHECK_THROWS_AS(read_records(path, skip), air::Error);  // the list never closes: the whole file is refused
  }
  // Whole: the first record settles the format (messages); the other four are bad records, skipped.
  ReadResult whole = read_records(write_tmp("cut.json", list.substr(0, end)), skip);
  CHECK(whole.records.size() == 1);
  CHECK(whole.skipped == 4);
  std::mt19937 rng(3);
  const std::string bytes = "[]{},\"\\: x\n";
  for (int k = 0; k < 400; ++k) {
    std::string s = list;
    s[rng() % s.size()] = bytes[rng() % bytes.size()];
    try {
      ReadResult r = read_records(write_tmp("flip.json", s), skip);
      for (const Record& rec : r.records) CHECK(!rec.where.empty());
    } catch (const air::Error&) {
    }
  }
}
