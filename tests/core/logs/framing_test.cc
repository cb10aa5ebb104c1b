// The line framer: `<ms> <o|e> <text>\n`, complete lines only, partial last lines, long lines split.
#include <catch2/catch.hpp>

#include "core/logs/framing.h"

using air::logs::LineFramer;
using air::logs::LogTail;

TEST_CASE("framer emits each complete line with its time and stream", "[framing]") {
  LineFramer f('o');
  std::string out;
  f.feed("hello\nworld\n", 1700000000123, out);
  CHECK(out == "1700000000123 o hello\n1700000000123 o world\n");
  CHECK(f.pending() == 0);
  LineFramer e('e');
  out.clear();
  e.feed("oops\n\n", 5, out);
  CHECK(out == "5 e oops\n5 e \n");  // an empty line stays a line
}

TEST_CASE("framer holds a partial line until it is completed or flushed", "[framing]") {
  LineFramer f('o');
  std::string out;
  f.feed("par", 1, out);
  f.feed("tial", 2, out);
  CHECK(out.empty());
  CHECK(f.pending() == 7);
  f.feed("ly done\nnext", 3, out);
  CHECK(out == "3 o partially done\n");
  out.clear();
  f.flush(4, out);
  CHECK(out == "4 o next\n");
  out.clear();
  f.flush(5, out);
  CHECK(out.empty());
}

TEST_CASE("framer keeps carriage returns and other bytes as they are", "[framing]") {
  LineFramer f('e');
  std::string out;
  f.feed(std::string("50%\r100%\ttab\0nul\n", 17), 9, out);
  CHECK(out == std::string("9 e 50%\r100%\ttab\0nul\n", 21));
}

TEST_CASE("framer splits a line longer than the limit into several lines", "[framing]") {
  SECTION("the default 64 KiB limit") {
    LineFramer f('o');
    std::string out;
    std::string line(3 * 65536 + 10, 'x');
    f.feed(line + "\n", 7, out);
    std::string piece = "7 o " + std::string(65536, 'x') + "\n";
    CHECK(out == piece + piece + piece + "7 o xxxxxxxxxx\n");
  }
  SECTION("a line that never ends is cut while it grows, not held without bound") {
    LineFramer f('o', 10);
    std::string out;
    for (int i = 0; i < 5; ++i) f.feed("abcdefg", i, out);  // 35 bytes, no newline
    CHECK(out == "1 o abcdefgabc\n2 o defgabcdef\n4 o gabcdefgab\n");
    CHECK(f.pending() == 5);
    out.clear();
    f.flush(9, out);
    CHECK(out == "9 o cdefg\n");
  }
  SECTION("a cut does not fall inside a UTF-8 character") {
    LineFramer f('o', 4);
    std::string out;
    f.feed("ab\xC3\xA9" "cd\n", 1, out);  // "abécd": the limit falls after the first byte of é
    CHECK(out == "1 o ab\xC3\xA9\n1 o cd\n");
    out.clear();
    f.feed("abc\xE2\x82\xAC" "\n", 1, out);  // "abc€"
    CHECK(out == "1 o abc\n1 o \xE2\x82\xAC\n");
  }
}

TEST_CASE("log tail gives the text of the last lines", "[framing]") {
  LogTail t(64);
  t.add("1 o first\n2 e second\n");
  t.add("3 o third\n");
  CHECK(t.last_lines(2) == std::vector<std::string>{"second", "third"});
  CHECK(t.last_lines(10) == std::vector<std::string>{"first", "second", "third"});
  for (int i = 0; i < 20; ++i) t.add("4 o line " + std::to_string(i) + "\n");
  auto last = t.last_lines(100);
  REQUIRE(!last.empty());
  CHECK(last.back() == "line 19");
  CHECK(last.front().rfind("line ", 0) == 0);  // the line cut at the front of the buffer is left out
}

// Found by fuzzing (tests/fuzz/corpus/log_framing/regress_1): one cut per read let a read longer than the
// limit leave more than a line's worth pending, growing with every such read.
TEST_CASE("framer cuts every full piece of a long read without a newline", "[framing]") {
  LineFramer f('o', 12);
  std::string out;
  f.feed(std::string(33, 'x'), 5, out);
  CHECK(out == "5 o xxxxxxxxxxxx\n5 o xxxxxxxxxxxx\n");
  CHECK(f.pending() == 9);
  for (int i = 0; i < 100; ++i) f.feed(std::string(1000, 'y'), 6, out);
  CHECK(f.pending() <= 12);
}
