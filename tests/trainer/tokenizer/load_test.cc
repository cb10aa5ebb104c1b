// Loading tokenizer.json: what we refuse, with the file and the JSON path in the message.
#include <catch2/catch.hpp>

#include <filesystem>

#include "tests/trainer/tokenizer/test_util.h"

using air::train::Tokenizer;
using namespace air::train::testing;
using Json = nlohmann::json;

TEST_CASE("a valid small tokenizer loads") {
  auto t = Tokenizer::from_json_text(small_tokenizer().dump(), "t.json");
  CHECK(t.vocab_size() == 261);
  CHECK(t.bos_id() == 260);
  CHECK(t.token_to_id("abc") == 258);
  CHECK_FALSE(t.eos_id().has_value());
  CHECK_FALSE(t.pad_id().has_value());
}

TEST_CASE("a well-known BOS name in the plain vocabulary is no BOS (Qwen's \"<s>\" piece)") {
  auto j = small_tokenizer();
  j["post_processor"] = nullptr;  // no template: the BOS is guessed by name
  j["model"]["vocab"]["<s>"] = 261;
  auto t = Tokenizer::from_json_text(j.dump(), "t.json");
  CHECK(t.token_to_id("<s>") == 261);
  CHECK_FALSE(t.bos_id().has_value());
  j["added_tokens"].push_back({{"id", 261}, {"content", "<s>"}, {"single_word", false}, {"lstrip", false},
                               {"rstrip", false}, {"normalized", false}, {"special", true}});
  CHECK(Tokenizer::from_json_text(j.dump(), "t.json").bos_id() == 261);
}

TEST_CASE("unsupported models are refused naming the JSON path") {
  auto j = small_tokenizer();
  j["model"]["type"] = "Unigram";
  CHECK(load_error(j) == R"(t.json: model.type: "Unigram" is not supported (only "BPE"))");
  j = small_tokenizer();
  j["model"]["dropout"] = 0.1;
  CHECK(load_error(j) == "t.json: model.dropout: BPE dropout is not supported (it makes encoding random)");
  j = small_tokenizer();
  j["model"]["continuing_subword_prefix"] = "##";
  CHECK(load_error(j) == "t.json: model.continuing_subword_prefix: is not supported (no supported model family uses it)");
  j = small_tokenizer();
  j["model"]["byte_fallback"] = true;
  CHECK(load_error(j) == "t.json: model.byte_fallback: is not supported with a ByteLevel pre-tokenizer (byte-level "
                         "BPE never needs it)");
}

TEST_CASE("bad merges are refused naming the merge") {
  CHECK(load_error(small_tokenizer({"b c", "a zz"})) == R"(t.json: model.merges[1]: token "zz" is not in model.vocab)");
  CHECK(load_error(small_tokenizer({"c a"})) ==
        R"(t.json: model.merges[0]: the merged token "ca" is not in model.vocab)");
  CHECK(load_error(small_tokenizer({"abc"})) ==
        R"(t.json: model.merges[0]: expected "left right" (two tokens separated by one space), got "abc")");
  CHECK(load_error(small_tokenizer(Json::parse(R"([["a"]])"))) ==
        R"(t.json: model.merges[0]: expected "left right" or ["left", "right"])");
}

TEST_CASE("unsupported pre-tokenizers, normalizers and decoders are refused naming the component") {
  auto j = small_tokenizer();
  j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Whitespace"}};
  CHECK(load_error(j) == R"(t.json: pre_tokenizer.pretokenizers[0].type: "Whitespace" is not supported )"
                         "(supported pre-tokenizers: Split, ByteLevel, Metaspace, Sequence)");
  j = small_tokenizer();
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways";
  CHECK(load_error(j) == R"(t.json: pre_tokenizer.pretokenizers[0].behavior: "Sideways" is not supported (one of )"
                         "Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous)");
  j = small_tokenizer();
  j["pre_tokenizer"] = j["pre_tokenizer"]["pretokenizers"][0];
  CHECK(load_error(j) == "t.json: decoder: the ByteLevel decoder needs a ByteLevel pre-tokenizer");
  j = small_tokenizer();
  j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Metaspace"}, {"replacement", "ab"}};
  CHECK(load_error(j) == "t.json: pre_tokenizer.pretokenizers[0].replacement: expected one character");
  j = small_tokenizer();
  j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  CHECK(load_error(j) == "t.json: pre_tokenizer.pretokenizers[1]: ByteLevel cannot follow Metaspace (one model is "
                         "byte-level, the other SentencePiece-style)");
  j = small_tokenizer();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  CHECK(load_error(j) == "t.json: pre_tokenizer.pretokenizers[0].pattern.Regex: regex does not compile: "
                         "missing closing parenthesis at offset 9");
  j = small_tokenizer();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Lowercase"}}}}};
  CHECK(load_error(j) == R"(t.json: normalizer.normalizers[1].type: "Lowercase" is not supported (supported )"
                         "normalizers: NFC, NFD, NFKC, NFKD, Replace, Prepend, Strip, Sequence)");
  j = small_tokenizer();
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", " "}};
  CHECK(load_error(j) == R"(t.json: normalizer.pattern.Regex: a regex pattern is not supported here (only {"String": ...}))");
  j = small_tokenizer();
  j["decoder"] = {{"type", "CTC"}};
  CHECK(load_error(j) == R"(t.json: decoder.type: "CTC" is not supported (supported decoders: ByteLevel, Replace, )"
                         "ByteFallback, Fuse, Strip, Metaspace, Sequence)");
  j = small_tokenizer();
  j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "ByteLevel"}}, {{"type", "Fuse"}}}}};
  CHECK(load_error(j) == "t.json: decoder: a byte-level BPE tokenizer needs exactly the ByteLevel decoder");
  j = small_tokenizer();
  j["decoder"] = {{"type", "Strip"}, {"content", " "}, {"start", -1}, {"stop", 0}};
  j["pre_tokenizer"] = nullptr;
  CHECK(load_error(j) == "t.json: decoder.start: expected a count (an integer >= 0)");
  j = small_tokenizer();
  j["post_processor"] = {{"type", "BertProcessing"}};
  CHECK(load_error(j) == R"(t.json: post_processor.type: "BertProcessing" is not supported )"
                         "(only TemplateProcessing, ByteLevel, Sequence)");
}

TEST_CASE("malformed files get a clear error") {
  CHECK_THROWS_WITH(Tokenizer::from_json_text("{\"model\": ", "t.json"),
                    Catch::StartsWith("t.json: not valid JSON: parse error at line 1, column 11"));
  // A number no double holds is refused while parsing (nlohmann throws out_of_range there, not parse_error).
  CHECK_THROWS_WITH(Tokenizer::from_json_text("{\"model\": 444444444444444444444e4444444444}", "t.json"),
                    Catch::StartsWith("t.json: not valid JSON: number overflow parsing '444444444444444444444e4444444444'"));
  CHECK(load_error(Json::array()) == "t.json: (top level): expected a JSON object");
  auto j = small_tokenizer();
  j["model"]["vocab"]["zz"] = 3;
  CHECK_THAT(load_error(j), Catch::Contains("t.json: model.vocab: id 3 is given to both"));
  j = small_tokenizer();
  j["added_tokens"][0].erase("content");
  CHECK(load_error(j) == R"(t.json: added_tokens[0]: missing "content")");
  CHECK_THROWS_WITH(Tokenizer::from_file("/nonexistent/tokenizer.json"),
                    "/nonexistent/tokenizer.json: cannot read: No such file or directory");
}

TEST_CASE("tokenizer_config.json beside the file names BOS, EOS and PAD") {
  auto dir = std::filesystem::temp_directory_path() / "air_tokenizer_config_test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "tokenizer.json") << trained_json();
    std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": {"content": "<|pad|>"}, "pad_token": null})";
  }
  auto t = Tokenizer::from_file((dir / "tokenizer.json").string());
  CHECK(t.eos_id() == t.token_to_id("<|pad|>"));
  CHECK(t.bos_id() == t.token_to_id("<|begin_of_text|>"));
  CHECK_FALSE(t.pad_id().has_value());  // "pad_token": null: none, as transformers
  // Qwen's tokenizer_config says "bos_token": null: no BOS, whatever a well-known name would find.
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": null})";
  CHECK_FALSE(Tokenizer::from_file((dir / "tokenizer.json").string()).bos_id().has_value());
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "<|nope|>"})";
  CHECK_THROWS_WITH(Tokenizer::from_file((dir / "tokenizer.json").string()),
                    Catch::Contains("tokenizer_config.json names eos_token \"<|nope|>\", which is not a token"));
  std::filesystem::remove_all(dir);
}
