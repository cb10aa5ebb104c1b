// libFuzzer target: the tokenizer (trainer/tokenizer*, no libtorch). A tokenizer trained once on the test
// corpus encodes the input's bytes; decoding gives back the input (its lossy UTF-8 repair when the bytes
// are not valid UTF-8), every id is in the vocabulary. The same bytes as a tokenizer.json must load or be
// refused with std::runtime_error, never crash.
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/fuzz/fuzz_check.h"
#include "trainer/tokenizer/bpe_train.h"
#include "trainer/tokenizer/tokenizer.h"
#include "trainer/tokenizer/unicode.h"

namespace {

std::unique_ptr<air::train::Tokenizer> g_tok;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::ifstream in(std::string(AIR_TEST_DATA_DIR) + "/trainer/data/corpus.txt", std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  air::train::BpeTrainOptions options;
  options.vocab_size = 512;
  air::train::BpeTrainer trainer(options);
  trainer.add_text(ss.str());
  g_tok = std::make_unique<air::train::Tokenizer>(
      air::train::Tokenizer::from_json_text(trainer.to_tokenizer_json(trainer.train()), "fuzz.json"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto ids = g_tok->encode(text, size % 2 == 1);
  for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < g_tok->vocab_size(), "an id outside the vocabulary");
  std::string back = g_tok->decode(ids, true);
  FUZZ_CHECK(back == air::train::utf8_lossy(text) || text.find("<|") != std::string::npos,
             "decode(encode(text)) is not the text");
  std::string kept = g_tok->decode(ids, false);
  if (size % 2 == 0) FUZZ_CHECK(kept == air::train::utf8_lossy(text), "decode without skipping differs");
  if (size < 4096) {
    try {
      (void)air::train::Tokenizer::from_json_text(text, "fuzz.json");
    } catch (const std::runtime_error&) {
      // refused with a message: fine
    }
  }
  return 0;
}
