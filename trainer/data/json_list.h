// A .json dataset - one JSON list of records - read element by element: each call hands back the next
// element's text (to parse on any thread), so a reader holds one chunk of records, not the file. The
// scanner only follows strings and brackets to find where an element ends; the element's own syntax is
// checked when it is parsed. No libtorch (air_data).
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace air::train {

class JsonListReader {
 public:
  explicit JsonListReader(const std::string& path);  // throws air::Error when the file cannot be read
  // The next element's text and the line it starts on; false after the closing ']'. Throws air::Error
  // (path:line: what) when the file is not one list: no '[', no ',' between elements, a trailing comma,
  // text after the list, or a file that ends inside the list (truncated).
  bool next(std::string& text, int64_t& line);
  int64_t elements() const { return elements_; }  // handed back so far
  int64_t offset() const { return consumed_; }    // bytes of the file read so far

 private:
  int peek();
  int get();
  void skip_space();
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  std::ifstream in_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  int64_t consumed_ = 0, line_ = 1, elements_ = 0;
  bool started_ = false, ended_ = false;
};

}  // namespace air::train
