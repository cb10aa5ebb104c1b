// Compares our tokenizer with reference results from Hugging Face's `tokenizers` (written by
// tests/trainer/llama3/gen-ref-ids.mjs): ids without and with special tokens, and decoding.
// usage: tokenizer_oracle_check TOKENIZER_JSON REF_JSONL
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: tokenizer_oracle_check TOKENIZER_JSON REF_JSONL\n";
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
