// HTTP/1.1 request-head, chunked-body, query-string and Range parsing (server/http/parse.h).
#include "server/http/parse.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace air::server::http {

bool CaseLess::operator()(const std::string& a, const std::string& b) const {
  return ::strcasecmp(a.c_str(), b.c_str()) < 0;
}

std::string Request::get_header_value(const std::string& key, const char* dflt) const {
  auto it = headers.find(key);
  return it == headers.end() ? std::string(dflt) : it->second;
}

std::string Request::get_param_value(const std::string& key) const {
  auto it = params.find(key);
  return it == params.end() ? std::string() : it->second;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool parse_request_line(std::string_view line, Request& req, std::string& why) {
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return why = "malformed request line", false;
  req.method = std::string(line.substr(0, sp1));
  req.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  req.version = std::string(line.substr(sp2 + 1));
  if (req.method.empty() || !std::all_of(req.method.begin(), req.method.end(), is_token_char))
    return why = "malformed method", false;
  if (req.version != "HTTP/1.1" && req.version != "HTTP/1.0") return why = "unsupported HTTP version", false;
  if (req.target.empty() || req.target[0] != '/') return why = "the request target must be a path", false;
  auto q = req.target.find('?');
  req.path = url_decode(std::string_view(req.target).substr(0, q), false);
  if (q != std::string::npos) parse_query(std::string_view(req.target).substr(q + 1), req.params);
  return true;
}

}  // namespace

HeadStatus parse_head(std::string_view buf, size_t max_bytes, size_t max_headers, Request& req, size_t& consumed,
                      std::string& why) {
  auto end = buf.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (buf.size() > max_bytes) return why = "request head too large", HeadStatus::kTooLarge;
    return HeadStatus::kIncomplete;
  }
  if (end + 4 > max_bytes) return why = "request head too large", HeadStatus::kTooLarge;
  std::string_view head = buf.substr(0, end + 2);
  size_t pos = head.find("\r\n");
  if (!parse_request_line(head.substr(0, pos), req, why)) return HeadStatus::kBad;
  pos += 2;
  size_t count = 0;
  while (pos < head.size()) {
    size_t eol = head.find("\r\n", pos);
    std::string_view line = head.substr(pos, eol - pos);
    pos = eol + 2;
    if (++count > max_headers) return why = "too many header lines", HeadStatus::kTooLarge;
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return why = "malformed header line", HeadStatus::kBad;
    std::string_view name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_token_char)) return why = "malformed header name", HeadStatus::kBad;
    req.headers.emplace(std::string(name), std::string(trim(line.substr(colon + 1))));
  }
  consumed = end + 4;
  return HeadStatus::kDone;
}

std::string url_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

void parse_query(std::string_view query, Params& out) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (kv.empty()) continue;
    auto eq = kv.find('=');
    std::string k = url_decode(kv.substr(0, eq), true);
    std::string v = eq == std::string_view::npos ? std::string() : url_decode(kv.substr(eq + 1), true);
    out.emplace(std::move(k), std::move(v));
  }
}

size_t ChunkedDecoder::feed(std::string_view in, std::string& out) {
  size_t used = 0;
  while (used < in.size() && state_ != State::kDone && state_ != State::kBad) {
    std::string_view rest = in.substr(used);
    if (state_ == State::kData) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, rest.size()));
      out.append(rest.data(), n);
      used += n;
      remaining_ -= n;
      decoded_ += n;
      if (remaining_ == 0) state_ = State::kDataEnd;
      continue;
    }
    auto eol = rest.find("\r\n");
    if (eol == std::string_view::npos) {
      if (rest.size() > 1024) state_ = State::kBad;  // a size or trailer line that never ends
      break;
    }
    std::string_view line = rest.substr(0, eol);
    used += eol + 2;
    if (state_ == State::kDataEnd) {
      state_ = line.empty() ? State::kSize : State::kBad;
    } else if (state_ == State::kTrailer) {
      if (line.empty()) state_ = State::kDone;
    } else {  // kSize: hex digits, optional ";ext"
      line = line.substr(0, line.find(';'));
      line = trim(line);
      uint64_t n = 0;
      if (line.empty() || line.size() > 15) {
        state_ = State::kBad;
        break;
      }
      for (char c : line) {
        int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (d < 0) {
          state_ = State::kBad;
          break;
        }
        n = n * 16 + static_cast<uint64_t>(d);
      }
      if (state_ == State::kBad) break;
      remaining_ = n;
      state_ = n == 0 ? State::kTrailer : State::kData;
    }
  }
  return used;
}

bool parse_range(const std::string& header, uint64_t size, uint64_t& first, uint64_t& last, bool& unsatisfiable) {
  unsatisfiable = false;
  std::string_view h = trim(header);
  if (h.rfind("bytes=", 0) != 0) return false;
  h.remove_prefix(6);
  if (h.find(',') != std::string_view::npos) return false;  // several ranges: send the whole body
  auto dash = h.find('-');
  if (dash == std::string_view::npos) return false;
  auto number = [](std::string_view s, uint64_t& v) {
    if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    v = std::stoull(std::string(s));
    return true;
  };
  std::string_view a = trim(h.substr(0, dash)), b = trim(h.substr(dash + 1));
  uint64_t x = 0, y = 0;
  if (a.empty()) {  // suffix: the last y bytes
    if (!number(b, y)) return false;
    if (y == 0 || size == 0) return unsatisfiable = true, true;
    first = size - std::min(y, size);
    last = size - 1;
    return true;
  }
  if (!number(a, x)) return false;
  if (!b.empty() && (!number(b, y) || y < x)) return false;
  if (x >= size) return unsatisfiable = true, true;
  first = x;
  last = b.empty() ? size - 1 : std::min(y, size - 1);
  return true;
}

}  // namespace air::server::http
