// HTTP/1.1 request parsing for server/http/server.cc: the request head (with its limits), chunked
// bodies, query strings. Pure functions on buffers, so they are tested without sockets.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http/server.h"

namespace air::server::http {

enum class HeadStatus { kIncomplete, kDone, kBad, kTooLarge };

// Parses a request head at the start of buf. kDone: `consumed` bytes (through the blank line) were used.
// kTooLarge: more than max_bytes or max_headers; kBad: malformed (`why` says how).
HeadStatus parse_head(std::string_view buf, size_t max_bytes, size_t max_headers, Request& req, size_t& consumed,
                      std::string& why);

std::string url_decode(std::string_view s, bool plus_is_space);
void parse_query(std::string_view query, Params& out);

// Decodes a chunked body incrementally. feed() consumes what it can from `in` and appends the data to
// `out`; state() then says whether more input is needed, the body ended, or it was malformed.
class ChunkedDecoder {
 public:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone, kBad };
  size_t feed(std::string_view in, std::string& out);
  State state() const { return state_; }
  uint64_t decoded() const { return decoded_; }

 private:
  State state_ = State::kSize;
  uint64_t remaining_ = 0, decoded_ = 0;
};

}  // namespace air::server::http
