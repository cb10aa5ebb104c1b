// Compares our tokenizer with reference results from Hugging Face's `tokenizers` (written by
// tests/trainer/llama3/gen-ref-ids.mjs): ids without and with special tokens, and decoding. It also checks
// encode_with_offsets on every string: the same ids, and ranges inside the text, starting in order, covering
// every byte (the contract the chat-data masks rely on); --may-drop: for tokenizers that remove text (Strip,
// Split's Removed), bytes may be in no token's range.
// usage: tokenizer_oracle_check TOKENIZER_JSON REF_JSONL [--may-drop]
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "trainer/tokenizer/tokenizer.h"

namespace {

std::string show(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]";
}

struct Checker {
  int failures = 0;
  void expect(bool ok, const std::string& what, const std::string& text, const std::string& want,
              const std::string& got) {
    if (ok) return;
    if (++failures <= 20) {
      std::cerr << "MISMATCH " << what << " for " << nlohmann::json(text).dump() << "\n  want " << want
                << "\n  got  " << got << "\n";
    }
  }
};

// Empty when the ranges lie inside the text, start in order and cover every byte; else what is wrong.
std::string offsets_problem(const air::train::Tokenizer::Encoding& e, const std::string& text, bool may_drop) {
  if (e.offsets.size() != e.ids.size()) return "one range per token expected";
  std::vector<bool> covered(text.size(), false);
  uint32_t last = 0;
  for (size_t i = 0; i < e.offsets.size(); ++i) {
    auto [b, end] = e.offsets[i];
    if (b > end || end > text.size()) return "token " + std::to_string(i) + ": range outside the text";
    if (b < last) return "token " + std::to_string(i) + ": starts before the previous token";
    last = b;
    for (uint32_t k = b; k < end; ++k) covered[k] = true;
  }
  for (size_t k = 0; k < text.size() && !may_drop; ++k) {
    if (!covered[k]) return "byte " + std::to_string(k) + " is in no token's range";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  bool may_drop = argc == 4 && std::string(argv[3]) == "--may-drop";
  if (argc != 3 && !may_drop) {
    std::cerr << "usage: tokenizer_oracle_check TOKENIZER_JSON REF_JSONL [--may-drop]\n";
    return 2;
  }
  try {
    auto tok = air::train::Tokenizer::from_file(argv[1]);
    std::ifstream in(argv[2]);
    if (!in) throw std::runtime_error(std::string(argv[2]) + ": cannot read");
    Checker c;
    int cases = 0;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto j = nlohmann::json::parse(line);
      std::string text = j.at("text");
      auto want = j.at("ids").get<std::vector<int32_t>>();
      auto want_bos = j.at("ids_bos").get<std::vector<int32_t>>();
      auto got = tok.encode(text);
      auto got_bos = tok.encode(text, true);
      c.expect(got == want, "ids", text, show(want), show(got));
      c.expect(got_bos == want_bos, "ids with special tokens", text, show(want_bos), show(got_bos));
      for (bool special : {false, true}) {
        auto e = tok.encode_with_offsets(text, special);
        c.expect(e.ids == (special ? got_bos : got), "encode_with_offsets ids", text, show(special ? got_bos : got),
                 show(e.ids));
        std::string problem = offsets_problem(e, text, may_drop);
        c.expect(problem.empty(), "offsets", text, "ranges tiling the text", problem);
      }
      if (j.contains("decoded")) {
        std::string dec = tok.decode(want);
        c.expect(dec == j["decoded"].get<std::string>(), "decode", text, j["decoded"].dump(),
                 nlohmann::json(dec).dump());
      }
      if (j.contains("decoded_skip")) {
        std::string dec = tok.decode(want_bos, true);
        c.expect(dec == j["decoded_skip"].get<std::string>(), "decode skipping special tokens", text,
                 j["decoded_skip"].dump(), nlohmann::json(dec).dump());
      }
      ++cases;
    }
    if (cases == 0) throw std::runtime_error(std::string(argv[2]) + ": no cases");
    if (c.failures) {
      std::cerr << argv[1] << ": " << c.failures << " mismatches in " << cases << " strings\n";
      return 1;
    }
    std::cout << argv[1] << ": " << cases << " strings, ids, ids with special tokens and decoding all equal\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tokenizer_oracle_check: " << e.what() << "\n";
    return 1;
  }
}
