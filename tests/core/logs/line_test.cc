// The log line's one home: parsing, classification, and the run page's copy of the tables (web/patterns.js).
#include "core/logs/line.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

using namespace air::logs;

TEST_CASE("a stored line parses into time, stream and text, other shapes keep the whole line") {
  LogLine l = parse_log_line("1700000000123 e CUDA error: out of memory\n");
  CHECK(l.time_ms == 1700000000123);
  CHECK(l.stream == 'e');
  CHECK(l.text == "CUDA error: out of memory");
  CHECK(parse_log_line("1700000000123 o").text.empty());
  LogLine odd = parse_log_line("partial line without a stamp");
  CHECK(odd.time_ms == 0);
  CHECK(odd.stream == 'o');
  CHECK(odd.text == "partial line without a stamp");
  CHECK(parse_log_line("12x o text").text == "12x o text");
  CHECK(line_text("1700000000123 o step 5") == "step 5");
  CHECK(line_text("step 5") == "step 5");
}

TEST_CASE("lines that end a training job are fatal, error words make errors, the rest is plain") {
  for (const char* fatal : {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                            "[rank3]: NCCL watchdog thread terminated with exception: Timeout",
                            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)",
                            "torch.distributed.DistBackendError: NCCL error in: ...",
                            "TCPStore: Timed out waiting for clients",
                            "bash: line 1:  4242 Killed  python train.py",
                            "Segmentation fault (core dumped)",
                            "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus",
                            "CUDA error: an illegal memory access was encountered",
                            "air-train: command not found"})
    CHECK(classify_line(fatal) == LineClass::kFatal);
  CHECK(classify_line("NVRM: Xid (PCI:0000:3b:00): 48, pid=77, DBE (double-bit error)") == LineClass::kFatal);
  // An application's own Xid (13: a graphics exception) is an error, not a failing GPU.
  CHECK(classify_line("NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception") == LineClass::kError);
  CHECK(classify_line("Traceback (most recent call last):") == LineClass::kError);
  CHECK(classify_line("ValueError: bad value") == LineClass::kError);
  CHECK(classify_line("NCCL INFO Channel 00/02 : 0 1") == LineClass::kPlain);  // NCCL alone is not a timeout
  CHECK(classify_line("step 5/30 loss 1.23 lr 3e-5") == LineClass::kPlain);
  CHECK(classify_line("") == LineClass::kPlain);
}

namespace {
// The JSON array after `export const NAME = ` in web/patterns.js.
nlohmann::json js_array(const std::string& js, const std::string& name) {
  size_t at = js.find("export const " + name + " = [");
  REQUIRE(at != std::string::npos);
  size_t open = js.find('[', at), close = js.find("];", open);
  REQUIRE(close != std::string::npos);
  std::string text = js.substr(open, close - open + 1);
  // The page's file allows a trailing comma; JSON does not.
  if (size_t c = text.find_last_not_of(" \n]"); c != std::string::npos && text[c] == ',') text.erase(c, 1);
  return nlohmann::json::parse(text);
}
}  // namespace

TEST_CASE("the run page classifies with exactly the same tables (web/patterns.js)") {
  std::ifstream in(std::string(AIR_TEST_DATA_DIR) + "/../web/patterns.js");
  std::string js((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(!js.empty());
  nlohmann::json fatal = js_array(js, "FATAL_PATTERNS"), errors = js_array(js, "ERROR_WORDS");
  nlohmann::json want_fatal = nlohmann::json::array(), want_errors = nlohmann::json::array();
  for (const auto& words : fatal_patterns()) {
    nlohmann::json p = nlohmann::json::array();
    for (auto w : words) p.push_back(std::string(w));
    want_fatal.push_back(p);
  }
  for (auto w : error_words()) want_errors.push_back(std::string(w));
  CHECK(fatal == want_fatal);
  CHECK(errors == want_errors);
  CHECK(fatal.size() > 20);  // the parse found the tables, not an empty match
}
