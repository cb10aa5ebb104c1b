// BPE training and air-tokenizer-train: determinism, vocabulary size, the committed example tokenizer,
// and the tool's input formats and errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include "tests/trainer/tokenizer/test_util.h"
#include "trainer/tokenizer/train_tool.h"

using air::train::BpeTrainer;
using air::train::BpeTrainOptions;
using air::train::Tokenizer;
using namespace air::train::testing;
namespace fs = std::filesystem;

namespace {

struct ToolRun {
  int code;
  std::string out, err;
};

ToolRun run_tool(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = air::train::run_tokenizer_train(args, out, err);
  return {code, out.str(), err.str()};
}

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("air_tok_train_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("training is deterministic and fills the vocabulary exactly") {
  std::string a = trained_json(400), b = trained_json(400);
  CHECK(a == b);
  auto t = Tokenizer::from_json_text(a);
  CHECK(t.vocab_size() == 400);
  CHECK(t.token_to_id("<|begin_of_text|>") == 397);
  CHECK(t.token_to_id("<|pad|>") == 399);
}

TEST_CASE("learned merges compress the training text and frequent words become one token") {
  const Tokenizer& t = trained_tokenizer();
  std::string corpus = read_text(corpus_path());
  auto ids = t.encode(corpus);
  CHECK(static_cast<double>(corpus.size()) / static_cast<double>(ids.size()) > 2.5);
  CHECK(t.encode(" the").size() == 1);
  CHECK(t.encode("### Instruction:\n").size() <= 4);
}

TEST_CASE("training stops when no pair is frequent enough") {
  BpeTrainOptions options;
  options.vocab_size = 5000;
  BpeTrainer trainer(options);
  trainer.add_text("abab abab");
  auto r = trainer.train();
  // Words " abab" x1, "abab" x1: pairs a-b (4), b-a (2), space-a (1).
  REQUIRE(r.merges.size() >= 1);
  CHECK(r.tokens[256] == "ab");
  for (auto [x, y] : r.merges) CHECK(x < static_cast<int32_t>(r.tokens.size()));
  CHECK(r.tokens.size() < 300);
}

TEST_CASE("special tokens in the training text do not shape the merges") {
  BpeTrainOptions options;
  options.vocab_size = 300;
  BpeTrainer with(options), without(options);
  with.add_text("hello<|end_of_text|><|end_of_text|><|end_of_text|> world");
  without.add_text("hello world");
  CHECK(with.to_tokenizer_json(with.train()) != "");
  CHECK(with.train().merges == without.train().merges);
}

TEST_CASE("examples/tiny_model/tokenizer.json is exactly what our trainer makes from the example data") {
  fs::path committed = fs::path(AIR_SOURCE_DIR) / "examples/tiny_model/tokenizer.json";
  fs::path data = fs::path(AIR_SOURCE_DIR) / "examples/data/alpaca_tiny.json";
  if (!fs::exists(committed) || !fs::exists(data)) {
    WARN("examples/tiny_model/tokenizer.json or examples/data/alpaca_tiny.json not present");
    return;
  }
  auto dir = fresh_dir("example");
  auto run = run_tool({"-o", dir.string(), data.string()});
  REQUIRE(run.code == 0);
  CHECK(read_text((dir / "tokenizer.json").string()) == read_text(committed.string()));
  auto t = Tokenizer::from_file(committed.string());
  CHECK(t.bos_id() == t.token_to_id("<|begin_of_text|>"));
  CHECK(t.eos_id() == t.token_to_id("<|end_of_text|>"));
  CHECK(t.pad_id() == t.token_to_id("<|pad|>"));
  fs::remove_all(dir);
}

TEST_CASE("air-tokenizer-train reads Alpaca JSON, JSONL and text, and writes both files") {
  auto dir = fresh_dir("formats");
  std::ofstream(dir / "a.json") << R"([{"instruction": "Say hi.", "input": "", "output": "Hi there!"},
                                       {"instruction": "Add.", "input": "1 2", "output": "3"}])";
  std::ofstream(dir / "b.jsonl") << "{\"text\": \"plain text record\"}\n\n\"a bare string\"\n";
  std::ofstream(dir / "c.txt") << "some more text\n";
  auto run = run_tool({"--vocab-size", "300", "-o", (dir / "out").string(), (dir / "a.json").string(),
                       (dir / "b.jsonl").string(), (dir / "c.txt").string()});
  CHECK(run.err == "");
  REQUIRE(run.code == 0);
  CHECK(run.out.find("5 texts") != std::string::npos);
  auto t = Tokenizer::from_file((dir / "out/tokenizer.json").string());
  CHECK(t.eos_id() == t.token_to_id("<|end_of_text|>"));
  auto texts = air::train::read_training_texts((dir / "a.json").string());
  CHECK(texts == std::vector<std::string>{"### Instruction:\nSay hi.\n\n### Response:\nHi there!",
                                          "### Instruction:\nAdd.\n\n### Input:\n1 2\n\n### Response:\n3"});
  fs::remove_all(dir);
}

TEST_CASE("air-tokenizer-train reports bad usage and bad input clearly") {
  auto dir = fresh_dir("errors");
  auto run = run_tool({"in.txt"});
  CHECK(run.code == 2);
  CHECK(run.err.rfind("air-tokenizer-train: error: -o OUT_DIR is required\nusage:", 0) == 0);
  run = run_tool({"--vocab-size", "ten", "-o", dir.string(), "in.txt"});
  CHECK(run.code == 2);
  CHECK(run.err.rfind("air-tokenizer-train: error: --vocab-size expects a positive integer, got 'ten'\n", 0) == 0);
  run = run_tool({"--vocab-size", "100", "-o", dir.string(), corpus_path()});
  CHECK(run.code == 2);
  CHECK(run.err == "air-tokenizer-train: error: vocab_size must leave room for the 256 byte tokens and the "
                   "special tokens\n");
  run = run_tool({"-o", dir.string(), (dir / "missing.txt").string()});
  CHECK(run.code == 1);
  CHECK(run.err == "air-tokenizer-train: error: " + (dir / "missing.txt").string() +
                       ": cannot read: No such file or directory\n");
  std::ofstream(dir / "bad.json") << R"([{"instruction": 5}])";
  run = run_tool({"-o", dir.string(), (dir / "bad.json").string()});
  CHECK(run.code == 1);
  CHECK(run.err == "air-tokenizer-train: error: " + (dir / "bad.json").string() +
                       ": record 0: \"instruction\" must be a string\n");
  CHECK_FALSE(fs::exists(dir / "tokenizer.json"));
  fs::remove_all(dir);
}
