// Encoding and decoding: merge order, ignore_merges, added tokens, BOS, decoding, odd input, threads.
#include <catch2/catch.hpp>

#include <filesystem>
#include <thread>

#include "tests/trainer/tokenizer/test_util.h"
#include "trainer/tokenizer/byte_level.h"
#include "trainer/tokenizer/normalize.h"

using air::train::Tokenizer;
using namespace air::train::testing;

using Ids = std::vector<int32_t>;

TEST_CASE("byte-level alphabet covers all 256 bytes, one character each") {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string text = air::train::bytes_to_byte_level(all);
  CHECK(air::train::byte_level_to_bytes(text) == all);
  CHECK(air::train::byte_level_char(' ') == "\xC4\xA0");   // Ġ
  CHECK(air::train::byte_level_char('\n') == "\xC4\x8A");  // Ċ
  CHECK(air::train::byte_level_char('A') == "A");
  CHECK_FALSE(air::train::byte_level_to_bytes(" ").has_value());  // a real space is not in the alphabet
}

TEST_CASE("merges apply lowest rank first") {
  auto t = Tokenizer::from_json_text(small_tokenizer().dump());
  // b c (rank 0) before a b (rank 1), then a bc (rank 2): "abc" -> "abc".
  CHECK(t.encode("abc") == Ids{258});
  // With "a b" ranked first the word stops at "ab" + "c" (no merge ab+c exists).
  auto t2 = Tokenizer::from_json_text(small_tokenizer({"a b", "b c", "a bc"}).dump());
  CHECK(t2.encode("abc") == Ids{256, 'c'});
  // Leftmost first among equal ranks: "bcbc" -> bc bc; "abab" -> ab ab.
  CHECK(t.encode("bcbc") == Ids{257, 257});
  CHECK(t.encode("abab") == Ids{256, 256});
}

TEST_CASE("ignore_merges takes a whole-word vocabulary entry first") {
  auto j = small_tokenizer({"a b", "b c", "a bc"});
  CHECK(Tokenizer::from_json_text(j.dump()).encode("abc") == Ids{256, 'c'});
  j["model"]["ignore_merges"] = true;
  CHECK(Tokenizer::from_json_text(j.dump()).encode("abc") == Ids{258});
  // "cc" has no merge at all: only ignore_merges reaches it.
  CHECK(Tokenizer::from_json_text(j.dump()).encode("cc") == Ids{259});
}

TEST_CASE("merges may be written as [left, right] pairs") {
  auto pairs = small_tokenizer(nlohmann::json::parse(R"([["b", "c"], ["a", "b"], ["a", "bc"]])"));
  CHECK(Tokenizer::from_json_text(pairs.dump()).encode("abc abab") ==
        Tokenizer::from_json_text(small_tokenizer().dump()).encode("abc abab"));
}

TEST_CASE("special tokens written in the text are recognised, longest first") {
  const Tokenizer& t = trained_tokenizer();
  int32_t bos = *t.token_to_id("<|begin_of_text|>");
  int32_t eos = *t.token_to_id("<|end_of_text|>");
  CHECK(t.bos_id() == bos);
  CHECK(t.eos_id() == eos);
  CHECK(t.pad_id() == t.token_to_id("<|pad|>"));
  auto ids = t.encode("Hi<|end_of_text|><|begin_of_text|>");
  REQUIRE(ids.size() >= 3);
  CHECK(ids[ids.size() - 2] == eos);
  CHECK(ids.back() == bos);
  CHECK(t.encode("<|end_of_text|") != Ids{eos});  // incomplete: plain text
  CHECK(t.is_special(eos));
  CHECK_FALSE(t.is_special(ids.front()));
}

TEST_CASE("add_bos applies the post-processor template") {
  const Tokenizer& t = trained_tokenizer();
  auto plain = t.encode("The river");
  auto with = t.encode("The river", true);
  REQUIRE(with.size() == plain.size() + 1);
  CHECK(with.front() == *t.bos_id());
  CHECK(Ids(with.begin() + 1, with.end()) == plain);
  CHECK(t.encode("", true) == Ids{*t.bos_id()});
  CHECK(t.encode("").empty());
}

TEST_CASE("decode inverts encode on any valid UTF-8 text") {
  const Tokenizer& t = trained_tokenizer();
  for (std::string text : {"The quick brown fox.", "  spaces\t\ttabs\r\nand lines\n\n", "你好，世界 🦙 مرحبا",
                           "e\xCC\x81 combining", "x\xC2\x85y\xEF\xBB\xBFz", "<|begin_of_text|>special<|pad|>",
                           "int main() { return 0; }", "12345678901234567890"}) {
    CAPTURE(text);
    CHECK(t.decode(t.encode(text)) == text);
  }
  auto ids = t.encode("<|begin_of_text|>Hello<|end_of_text|>");
  CHECK(t.decode(ids, true) == "Hello");
}

TEST_CASE("invalid UTF-8 encodes byte by byte and decodes lossily like Hugging Face") {
  const Tokenizer& t = trained_tokenizer();
  std::string bad = "ab\xFF" "cd\xE2\x82";
  auto ids = t.encode(bad);
  CHECK(t.decode(ids) == "ab\xEF\xBF\xBD" "cd\xEF\xBF\xBD");
  // A single token of a multi-byte character decodes to U+FFFD, as Rust's from_utf8_lossy does.
  auto llama = t.encode("\xF0\x9F\xA6\x99");
  CHECK(t.decode({llama.front()}) == "\xEF\xBF\xBD");
}

TEST_CASE("decode rejects ids outside the vocabulary") {
  const Tokenizer& t = trained_tokenizer();
  CHECK_THROWS_WITH(t.decode({5, t.vocab_size()}),
                    "trained.json: token id " + std::to_string(t.vocab_size()) + " is not in the vocabulary");
  CHECK_THROWS(t.decode({-1}));
  CHECK_FALSE(t.id_to_token(t.vocab_size()).has_value());
  CHECK(t.id_to_token('A') == "A");
  CHECK(t.id_to_token(' ') == "\xC4\xA0");
}

TEST_CASE("very long pieces and long whitespace runs encode and round-trip") {
  const Tokenizer& t = trained_tokenizer();
  for (std::string text : {std::string(100000, ' '), std::string(50000, 'a'), std::string(20000, '\n'),
                           std::string(30000, '7')}) {
    auto ids = t.encode(text);
    CHECK_FALSE(ids.empty());
    CHECK(t.decode(ids) == text);
  }
}

TEST_CASE("encoding is thread-safe and gives the same ids from every thread") {
  const Tokenizer& t = trained_tokenizer();
  std::string text = read_text(corpus_path());
  auto want = t.encode(text);
  std::vector<Ids> got(4);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int r = 0; r < 5; ++r) got[k] = t.encode(text);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& g : got) CHECK(g == want);
}

TEST_CASE("encode_with_offsets gives encode's ids and each token's byte range of the text") {
  const Tokenizer& t = trained_tokenizer();
  for (std::string text : {std::string("Hello world, héllo wörld!\n\n  indented\tcode() {}"),
                           std::string("<|begin_of_text|>Hi<|end_of_text|> there  "), std::string(""),
                           std::string("日本語のテキスト 🙂🙂 mixed"), std::string("\xff\xfe broken utf8")}) {
    INFO(text);
    for (bool bos : {false, true}) {
      auto e = t.encode_with_offsets(text, bos);
      REQUIRE(e.ids == t.encode(text, bos));
      REQUIRE(e.offsets.size() == e.ids.size());
      uint32_t covered = 0;
      for (size_t i = 0; i < e.ids.size(); ++i) {
        auto [b, end] = e.offsets[i];
        REQUIRE(b <= end);
        REQUIRE(end <= text.size());
        if (b == end) continue;  // the post-processor's BOS
        CHECK(b == covered);     // no gaps, no overlaps: the ranges tile the text
        covered = end;
        std::string piece = text.substr(b, end - b);
        auto token = t.id_to_token(e.ids[i]);
        REQUIRE(token);
        auto bytes = t.is_special(e.ids[i]) ? std::optional<std::string>(*token)
                                            : air::train::byte_level_to_bytes(*token);
        REQUIRE(bytes);
        CHECK(*bytes == piece);
      }
      CHECK(covered == text.size());
    }
  }
}

// The checks every tokenizer kind must pass for encode_with_offsets (the chat-data masks rely on them): ids
// equal to encode(); ranges inside the text, starting in order, covering every byte; and each token's bytes found in
// `normalized(range of the text)`, the normalizer applied to the text the range names.
template <typename Normalize, typename TokenBytes>
void check_offsets(const Tokenizer& t, const std::string& text, bool add_special, Normalize&& normalized,
                   TokenBytes&& token_bytes) {
  INFO(text);
  auto e = t.encode_with_offsets(text, add_special);
  REQUIRE(e.ids == t.encode(text, add_special));
  REQUIRE(e.offsets.size() == e.ids.size());
  std::vector<bool> covered(text.size(), false);
  uint32_t last_begin = 0;  // ends need not grow: NFC may compose a character with a mark written after another
  for (size_t i = 0; i < e.ids.size(); ++i) {
    auto [b, end] = e.offsets[i];
    INFO("token " << i << " id " << e.ids[i] << " range " << b << ".." << end);
    REQUIRE(b <= end);
    REQUIRE(end <= text.size());
    CHECK(b >= last_begin);
    last_begin = b;
    for (uint32_t k = b; k < end; ++k) covered[k] = true;
    if (b == end) continue;  // the template's BOS/EOS, or a token made only of inserted text
    std::string piece = t.is_special(e.ids[i]) ? text.substr(b, end - b) : normalized(text.substr(b, end - b));
    CHECK(piece.find(token_bytes(e.ids[i])) != std::string::npos);
  }
  for (size_t k = 0; k < text.size(); ++k) CHECK(covered[k]);
}

TEST_CASE("encode_with_offsets through the NFC normalizer (Qwen) points into the original, decomposed text") {
  auto j = small_tokenizer();
  j["normalizer"] = {{"type", "NFC"}};
  auto t = Tokenizer::from_json_text(j.dump());
  auto nfc = [](const std::string& s) {
    std::string out;
    air::train::unicode_normalize(s, air::train::UnicodeForm::kNfc, out);
    return out;
  };
  auto bytes = [&](int32_t id) { return *air::train::byte_level_to_bytes(*t.id_to_token(id)); };
  // "cafe" + U+0301 encodes as "café" (é = C3 A9): both of é's tokens point at "e" + the accent.
  std::string text = "cafe\u0301 abc";
  CHECK(t.encode(text) == t.encode("caf\u00e9 abc"));
  auto e = t.encode_with_offsets(text);
  REQUIRE(e.ids.size() >= 5);
  CHECK(e.offsets[3] == std::pair<uint32_t, uint32_t>{3, 6});
  CHECK(e.offsets[4] == std::pair<uint32_t, uint32_t>{3, 6});
  for (std::string s : {text, std::string("<|bos|>A\u030a\u212b x\u0323\u0307 \u1100\u1161\u11a8<|bos|>"),
                        std::string("plain text"), std::string(""), std::string("\xff\xfe e\u0301")}) {
    for (bool special : {false, true}) check_offsets(t, s, special, nfc, bytes);
  }
}

TEST_CASE("SentencePiece-style BPE: prepended and replaced spaces, merges, byte fallback, unk, decoders") {
  auto t = Tokenizer::from_json_text(small_sp_tokenizer().dump());
  const int32_t kBar = 259, kA = 260, kB = 261, kC = 262, kBarA = 263, kAB = 264, kBarAB = 265;
  CHECK(t.encode("ab ab") == Ids{kBarAB, kBarAB});
  CHECK(t.encode("ab ab", true) == Ids{1, kBarAB, kBarAB});
  CHECK(t.encode("cab") == Ids{kBar, kC, kAB});
  CHECK(t.encode("  a") == Ids{kBar, kBar, kBarA});
  // A character outside the vocabulary becomes its UTF-8 bytes' <0xXX> tokens.
  CHECK(t.encode("a\u65e5") == Ids{kBarA, 3 + 0xE6, 3 + 0x97, 3 + 0xA5});
  // Special tokens cut the text: the Prepend normalizer applies to each piece, as Hugging Face's does.
  CHECK(t.encode("a</s>a") == Ids{kBarA, 2, kBarA});
  CHECK(t.decode(t.encode("ab ab c\u65e5 a", true)) == "<s> ab ab c\u65e5 a");
  CHECK(t.decode(t.encode("ab ab c\u65e5 a", true), true) == "ab ab c\u65e5 a");
  CHECK(t.decode({3 + 0xE6, kA}) == "\xEF\xBF\xBD" "a");  // an incomplete byte sequence: U+FFFD per byte
  CHECK(t.bos_id() == 1);
  CHECK(t.eos_id() == 2);
  CHECK(t.id_to_token(kBarAB) == "\u2581ab");
  // Without byte fallback an unknown character is <unk>, and consecutive ones fuse into one.
  auto j = small_sp_tokenizer();
  j["model"]["byte_fallback"] = false;
  auto u = Tokenizer::from_json_text(j.dump());
  CHECK(u.encode("a\u65e5\u65e5b") == Ids{kBarA, 0, kB});
  j["model"]["fuse_unk"] = false;
  CHECK(Tokenizer::from_json_text(j.dump()).encode("a\u65e5\u65e5b") == Ids{kBarA, 0, 0, kB});
}

TEST_CASE("encode_with_offsets on SentencePiece-style BPE: ranges of the original spaces, inserted \u2581 empty") {
  auto t = Tokenizer::from_json_text(small_sp_tokenizer().dump());
  auto sp_normalize = [](std::string s) {
    std::string out = "\u2581";
    for (char c : s) out += c == ' ' ? std::string("\u2581") : std::string(1, c);
    return out;
  };
  auto bytes = [&](int32_t id) {
    std::string tok = *t.id_to_token(id);
    if (tok.size() == 6 && tok.compare(0, 3, "<0x") == 0) return std::string(1, static_cast<char>(std::stoi(tok.substr(3, 2), nullptr, 16)));
    return tok;
  };
  // "ab ab": "▁ab" (inserted ▁ + "ab") covers 0..2, "▁ab" (the space + "ab") covers 2..5.
  auto e = t.encode_with_offsets("ab ab");
  CHECK(e.offsets == std::vector<std::pair<uint32_t, uint32_t>>{{0, 2}, {2, 5}});
  // A lone inserted ▁ has an empty range where it was inserted.
  e = t.encode_with_offsets("cab");
  CHECK(e.offsets == std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {0, 1}, {1, 3}});
  for (std::string s : {std::string("ab ab"), std::string("  a b  c "), std::string("a\u65e5 \U0001F642b"),
                        std::string("<s>ab</s> a</s>"), std::string(""), std::string("\xff" "ab")}) {
    for (bool special : {false, true}) check_offsets(t, s, special, sp_normalize, bytes);
  }
}

TEST_CASE("add_bos_token / add_eos_token in tokenizer_config.json decide what the template adds") {
  auto dir = std::filesystem::temp_directory_path() / "air_tokenizer_template_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << small_sp_tokenizer().dump();
  auto path = (dir / "tokenizer.json").string();
  auto with_config = [&](const std::string& config) {
    std::ofstream(dir / "tokenizer_config.json") << config;
    return Tokenizer::from_file(path).encode("a", true);
  };
  const int32_t kBarA = 263;
  CHECK(with_config("{}") == Ids{1, kBarA});  // no keys: tokenizer.json's template
  CHECK(with_config(R"({"add_bos_token": false})") == Ids{kBarA});
  CHECK(with_config(R"({"add_bos_token": true, "add_eos_token": true})") == Ids{1, kBarA, 2});
  CHECK(with_config(R"({"add_eos_token": true, "eos_token": "<unk>"})") == Ids{1, kBarA, 0});
  CHECK_THROWS_WITH(with_config(R"({"add_bos_token": "yes"})"), Catch::Contains("add_bos_token: expected true or false"));
  std::filesystem::remove_all(dir);
}
