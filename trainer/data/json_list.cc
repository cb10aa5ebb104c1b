// Element by element through one JSON list (json_list.h).
#include "trainer/data/json_list.h"

#include "core/base/error.h"

namespace air::train {
namespace {
constexpr size_t kBlock = 1 << 20;
bool is_space(int c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
}  // namespace

JsonListReader::JsonListReader(const std::string& path) : path_(path), in_(path, std::ios::binary), buf_(kBlock) {
  if (!in_) throw Error("cannot read dataset " + path);
}

int JsonListReader::peek() {
  if (pos_ == len_) {
    in_.read(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    len_ = static_cast<size_t>(in_.gcount());
    pos_ = 0;
    if (len_ == 0) return -1;
  }
  return static_cast<unsigned char>(buf_[pos_]);
}

int JsonListReader::get() {
  const int c = peek();
  if (c < 0) return c;
  ++pos_;
  ++consumed_;
  if (c == '\n') ++line_;
  return c;
}

void JsonListReader::skip_space() {
  while (is_space(peek())) get();
}

void JsonListReader::fail(const std::string& what) const {
  throw Error(path_ + ":" + std::to_string(line_) + ": not valid JSON: " + what,
              "a .json dataset is one list of records ([{...}, {...}]); use .jsonl for one record per line");
}

bool JsonListReader::next(std::string& text, int64_t& line) {
  if (ended_) return false;
  const std::string after = "after record " + std::to_string(elements_ > 0 ? elements_ - 1 : 0);
  skip_space();
  if (!started_) {
    const int c = get();
    if (c < 0) fail("the file is empty; expected a list of records");
    if (c != '[') fail("expected a list of records ('['), found '" + std::string(1, static_cast<char>(c)) + "'");
    started_ = true;
    skip_space();
    if (peek() == ']') {
      get();
      ended_ = true;
    }
  } else {
    const int c = get();
    if (c == ']') ended_ = true;
    else if (c < 0) fail("the list ends without ']' " + after + " (a truncated file?)");
    else if (c != ',') fail("expected ',' or ']' " + after + ", found '" + std::string(1, static_cast<char>(c)) + "'");
    skip_space();
    if (!ended_ && peek() == ']') fail("a ',' before the closing ']'");
  }
  if (ended_) {
    skip_space();
    if (peek() >= 0) fail("text after the list of records");
    return false;
  }
  // One element: up to the bracket that closes it, or for a scalar up to the next ',', ']' or space.
  text.clear();
  line = line_;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (;;) {
    const int c = peek();
    if (c < 0) {
      if (depth == 0 && !in_string && !text.empty()) break;
      fail("the file ends inside record " + std::to_string(elements_) + " (a truncated file?)");
    }
    if (in_string) {
      text.push_back(static_cast<char>(get()));
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (depth == 0 && (c == ',' || c == ']' || is_space(c))) {
      if (text.empty()) fail("expected a record " + after);
      break;
    }
    text.push_back(static_cast<char>(get()));
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) break;  // a stray closer: the element's parse reports it
      if (--depth == 0) break;
    }
  }
  ++elements_;
  return true;
}

}  // namespace air::train
