// Our HTTP/1.1 client (core/client/http1.h): a non-blocking socket driven by poll() against one deadline
// per exchange, a 64 KiB receive buffer that also bounds the response head, and one retry on a fresh
// connection when a kept-alive one turns out to have been closed by the server before any response byte.
#include "core/client/http1.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace air::http1 {

namespace {

using Clock = std::chrono::steady_clock;
constexpr long kConnectTimeoutMs = 5000;  // as the libcurl transport's CURLOPT_CONNECTTIMEOUT_MS
constexpr size_t kBuffer = 64 << 10;      // the receive buffer; a response head must fit in it
constexpr size_t kUploadPiece = 128 << 10;

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

bool proxy_in_env() {
  for (const char* v : {"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"}) {
    const char* s = std::getenv(v);
    if (s && *s) return true;
  }
  return false;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string errno_text(int e) { return std::strerror(e); }

// Waits until fd is ready for `events` or `until` passes; false with `failure` set otherwise.
bool wait_ready(int fd, short events, Clock::time_point until, std::string& failure) {
  for (;;) {
    int ms = -1;
    if (until != Clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) return failure = "timed out", false;
      ms = static_cast<int>(std::min<long long>(left, 1 << 30));
    }
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failure = errno_text(errno), false;
    if (n == 0) return failure = "timed out", false;
    return true;
  }
}

}  // namespace

bool parse_url(const std::string& url, Url& out) {
  if (url.size() < 8 || ::strncasecmp(url.c_str(), "http://", 7) != 0) return false;
  std::string rest = url.substr(7);
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash), path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.empty() || authority.find('@') != std::string::npos || path.find_first_of("?# ") != std::string::npos)
    return false;
  Url u;
  std::string port;
  bool has_port = false;
  if (authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) return false;
    u.host = authority.substr(1, close - 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return false;
      port = after.substr(1);
      has_port = true;
    }
  } else {
    size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port = authority.substr(colon + 1);
      has_port = true;
    }
  }
  if (u.host.empty() || u.host.find_first_of(" \t\r\n") != std::string::npos) return false;
  if (has_port && (!all_digits(port) || port.size() > 5 || std::stoul(port) == 0 || std::stoul(port) > 65535))
    return false;
  u.port = has_port ? port : "80";
  while (!path.empty() && path.back() == '/') path.pop_back();
  u.prefix = path;
  u.host_header = authority;
  out = std::move(u);
  return true;
}

// The state of one exchange: its deadline, the receive buffer and what went wrong.
struct Connection::Exchange {
  Clock::time_point deadline = Clock::time_point::max();
  std::unique_ptr<char[]> data{new char[kBuffer]};
  size_t b = 0, e = 0;    // unread bytes are data[b, e)
  bool any_byte = false;  // a byte of the response arrived (a retry would no longer be safe)
  std::string failure;    // set when the exchange failed
  uint64_t delivered = 0, total = 0;

  size_t avail() const { return e - b; }
  std::string_view view() const { return {data.get() + b, e - b}; }

  bool wait(int fd, short events, Clock::time_point until) {
    std::string why;
    return wait_ready(fd, events, until, why) || fail(why);
  }

  bool fail(std::string why) {
    if (failure.empty()) failure = std::move(why);
    return false;
  }

  // Sends iov[0..n) whole.
  bool send_all(int fd, iovec* iov, int n) {
    while (n > 0) {
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = static_cast<size_t>(n);
      ssize_t k = ::sendmsg(fd, &m, MSG_NOSIGNAL);
      if (k < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          if (!wait(fd, POLLOUT, deadline)) return false;
          continue;
        }
        return fail("connection lost while sending the request (" + errno_text(errno) + ")");
      }
      auto left = static_cast<size_t>(k);
      while (n > 0 && left >= iov->iov_len) {
        left -= iov->iov_len;
        ++iov;
        --n;
      }
      if (n > 0) {
        iov->iov_base = static_cast<char*>(iov->iov_base) + left;
        iov->iov_len -= left;
      }
    }
    return true;
  }

  // Reads more bytes into the buffer: 1, 0 at the end of the stream, -1 on a failure (failure set).
  int recv_more(int fd) {
    if (b == e) b = e = 0;
    if (e == kBuffer && b > 0) {
      std::memmove(data.get(), data.get() + b, e - b);
      e -= b;
      b = 0;
    }
    if (e == kBuffer) return fail("malformed response: a header or chunk line over 64 KiB"), -1;
    for (;;) {
      ssize_t k = ::recv(fd, data.get() + e, kBuffer - e, 0);
      if (k > 0) {
        e += static_cast<size_t>(k);
        any_byte = true;
        return 1;
      }
      if (k == 0) return 0;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!wait(fd, POLLIN, deadline)) return -1;
        continue;
      }
      fail(errno == ECONNRESET ? "connection reset by the workspace" : errno_text(errno));
      return -1;
    }
  }

  // Reads until the buffer holds `what`; returns its offset from b, or npos (failure set).
  size_t need(int fd, std::string_view what) {
    for (;;) {
      size_t at = view().find(what);
      if (at != std::string_view::npos) return at;
      int k = recv_more(fd);
      if (k == 0) fail(any_byte ? "connection closed before the response was complete"
                                : "connection closed without a response");
      if (k <= 0) return std::string_view::npos;
    }
  }
};

Connection::~Connection() { close(); }

void Connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

HttpResponse Connection::perform(const Transfer& t, const std::string& token) {
  HttpResponse r;
  std::string target = url_.prefix + t.path;
  if (target.empty() || target[0] != '/' || target.find_first_of(" \t\r\n") != std::string::npos) {
    r.transport_error = "invalid request path '" + target + "'";
    return r;
  }
  if (token.find_first_of("\r\n") != std::string::npos || t.content_type.find_first_of("\r\n") != std::string::npos) {
    r.transport_error = "a header value holds a line break";
    return r;
  }
  // Sized once and appended to in place, so that no temporary or reallocated copy holds the token.
  std::string head;
  head.reserve(256 + target.size() + url_.host_header.size() + token.size() + t.content_type.size());
  head += t.method + " " + target + " HTTP/1.1\r\nHost: " + url_.host_header + "\r\nAccept: */*\r\n";
  if (!token.empty()) {
    head += "Authorization: Bearer ";
    head += token;
    head += "\r\n";
  }
  if (!t.content_type.empty()) head += "Content-Type: " + t.content_type + "\r\n";
  uint64_t length = t.upload ? t.upload_size : t.body.size();
  if (length > 0 || t.method == "POST" || t.method == "PUT" || t.method == "PATCH")
    head += "Content-Length: " + std::to_string(length) + "\r\n";
  head += "\r\n";

  Exchange x;
  if (t.timeout_ms > 0) x.deadline = Clock::now() + std::chrono::milliseconds(t.timeout_ms);
  off_t start = t.upload ? ::ftello(t.upload) : 0;
  for (int i = 0;; ++i) {
    Step s = attempt(t, head, x, r);
    if (s == Step::kDone || i == 1) break;
    close();  // the kept-alive connection was gone: once more on a new one
    r = HttpResponse{};
    auto deadline = x.deadline;
    x.b = x.e = 0;
    x.any_byte = false;
    x.failure.clear();
    x.deadline = deadline;
    x.delivered = x.total = 0;
    if (t.upload && ::fseeko(t.upload, start, SEEK_SET) != 0) {
      x.failure = "cannot rewind the upload: " + errno_text(errno);
      break;
    }
  }
  ::explicit_bzero(head.data(), head.size());  // the token: no copy left behind
  if (!x.failure.empty()) {
    close();
    r.status = 0;
    r.body.clear();
    r.headers.clear();
    r.transport_error = x.failure;
    r.transport_code = -1;
  }
  return r;
}

Connection::Step Connection::attempt(const Transfer& t, const std::string& head, Exchange& x, HttpResponse& r) {
  bool reused = fd_ >= 0;
  if (reused) {  // a kept-alive connection the server has closed (or written to) since is not used again
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) != 0) {
      close();
      reused = false;
    }
  }
  if (fd_ < 0) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;  // an address needs no resolver (nor NSS's modules)
    int rc = ::getaddrinfo(url_.host.c_str(), url_.port.c_str(), &hints, &res);
    if (rc == EAI_NONAME) {
      hints.ai_flags = AI_NUMERICSERV;  // not AI_ADDRCONFIG: it drops "localhost" where only loopback is up
      rc = ::getaddrinfo(url_.host.c_str(), url_.port.c_str(), &hints, &res);
    }
    if (rc != 0 || !res) return x.fail("unknown host"), Step::kDone;
    auto until = std::min(x.deadline, Clock::now() + std::chrono::milliseconds(kConnectTimeoutMs));
    std::string why;
    for (addrinfo* a = res; a && fd_ < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        why = errno_text(errno);
        continue;
      }
      int err = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
      if (err == EINPROGRESS) {
        std::string ignored;
        if (wait_ready(fd, POLLOUT, until, ignored)) {
          socklen_t len = sizeof err;
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        } else {
          err = ETIMEDOUT;
        }
      }
      if (err == 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd_ = fd;
        ++connects_;
      } else {
        ::close(fd);
        why = err == ECONNREFUSED ? "connection refused" : err == ETIMEDOUT ? "timed out" : errno_text(err);
      }
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) return x.fail(why.empty() ? "cannot connect" : why), Step::kDone;
  }

  // The request: head and a string body in one sendmsg, or the head and then the file in pieces.
  bool sent;
  iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                  {const_cast<char*>(t.body.data()), t.upload ? 0 : t.body.size()}};
  sent = x.send_all(fd_, iov, iov[1].iov_len ? 2 : 1);
  if (sent && t.upload) {
    std::unique_ptr<char[]> piece(new char[kUploadPiece]);
    for (uint64_t done = 0; sent && done < t.upload_size;) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kUploadPiece, t.upload_size - done));
      size_t got = std::fread(piece.get(), 1, want, t.upload);
      if (got == 0) {
        x.fail("the file to upload ended early (it changed while being sent)");
        close();
        return Step::kDone;
      }
      iovec one{piece.get(), got};
      sent = x.send_all(fd_, &one, 1);
      done += got;
      if (sent && t.progress && *t.progress) (*t.progress)(done, t.upload_size);
    }
  }
  std::string send_failure;
  if (!sent) {
    if (x.failure == "timed out") return Step::kDone;
    // The server may have answered before taking the whole body (a refusal, a 413): read that answer.
    send_failure = x.failure;
    x.failure.clear();
  }

  // The response head (1xx interim answers skipped).
  std::string version;
  for (;;) {
    size_t end = x.need(fd_, "\r\n\r\n");
    if (end == std::string_view::npos) {
      if (reused && !x.any_byte && x.failure != "timed out") return Step::kRetry;
      if (!send_failure.empty()) x.failure = send_failure;
      return Step::kDone;
    }
    std::string_view h = x.view().substr(0, end);
    x.b += end + 4;
    size_t eol = h.find("\r\n");
    std::string_view status_line = h.substr(0, eol);
    // "HTTP/1.1 200 OK"
    if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ' ||
        !all_digits(status_line.substr(9, 3)))
      return x.fail("malformed response: '" + std::string(status_line.substr(0, 80)) + "'"), Step::kDone;
    version = std::string(status_line.substr(0, 8));
    r.status = std::atol(std::string(status_line.substr(9, 3)).c_str());
    r.headers.clear();
    while (eol != std::string_view::npos) {
      h.remove_prefix(eol + 2);
      eol = h.find("\r\n");
      std::string_view line = h.substr(0, eol);
      size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0)
        return x.fail("malformed response header '" + std::string(line.substr(0, 80)) + "'"), Step::kDone;
      r.headers[lower(std::string(line.substr(0, colon)))] = std::string(trim(line.substr(colon + 1)));
    }
    if (r.status >= 100 && r.status < 200) continue;
    break;
  }
  std::string connection = lower(r.header("connection"));
  bool keep = version == "HTTP/1.1" ? connection.find("close") == std::string::npos
                                    : connection.find("keep-alive") != std::string::npos;
  if (!send_failure.empty()) keep = false;  // the request was not sent whole: nothing more on this connection

  auto deliver = [&](const char* p, size_t n) {
    if (t.download) {
      if (std::fwrite(p, 1, n, t.download) != n) return x.fail("cannot write the download: " + errno_text(errno));
    } else {
      r.body.append(p, n);
    }
    x.delivered += n;
    if (t.download && t.progress && *t.progress) (*t.progress)(x.delivered, x.total);
    return true;
  };
  auto closed_early = [&] { return x.fail("connection closed before the response was complete"); };

  std::string te = lower(r.header("transfer-encoding")), cl = r.header("content-length");
  if (t.method == "HEAD" || r.status == 204 || r.status == 304) {
    // no body
  } else if (te.find("chunked") != std::string::npos) {
    for (;;) {
      size_t eol = x.need(fd_, "\r\n");
      if (eol == std::string_view::npos) return Step::kDone;
      std::string_view line = x.view().substr(0, eol);
      line = line.substr(0, line.find(';'));
      uint64_t size = 0;
      line = trim(line);
      if (line.empty() || line.size() > 15) return x.fail("malformed chunk size"), Step::kDone;
      for (char c : line) {
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return x.fail("malformed chunk size"), Step::kDone;
        size = size * 16 + static_cast<uint64_t>(d);
      }
      x.b += eol + 2;
      if (size == 0) {  // trailers, then the blank line
        for (;;) {
          size_t e2 = x.need(fd_, "\r\n");
          if (e2 == std::string_view::npos) return Step::kDone;
          x.b += e2 + 2;
          if (e2 == 0) break;
        }
        break;
      }
      while (size > 0) {
        if (x.avail() == 0) {
          int k = x.recv_more(fd_);
          if (k == 0) closed_early();
          if (k <= 0) return Step::kDone;
        }
        size_t take = static_cast<size_t>(std::min<uint64_t>(size, x.avail()));
        if (!deliver(x.data.get() + x.b, take)) return Step::kDone;
        x.b += take;
        size -= take;
      }
      size_t crlf = x.need(fd_, "\r\n");
      if (crlf == std::string_view::npos) return Step::kDone;
      if (crlf != 0) return x.fail("malformed chunk: no line end after its data"), Step::kDone;
      x.b += 2;
    }
  } else if (!cl.empty()) {
    if (!all_digits(cl) || cl.size() > 18) return x.fail("malformed Content-Length '" + cl + "'"), Step::kDone;
    uint64_t left = std::stoull(cl);
    x.total = left;
    if (!t.download && left <= (64u << 20)) r.body.reserve(static_cast<size_t>(left));
    while (left > 0) {
      if (x.avail() == 0) {
        int k = x.recv_more(fd_);
        if (k == 0) closed_early();
        if (k <= 0) return Step::kDone;
      }
      size_t take = static_cast<size_t>(std::min<uint64_t>(left, x.avail()));
      if (!deliver(x.data.get() + x.b, take)) return Step::kDone;
      x.b += take;
      left -= take;
    }
  } else {  // the body ends where the connection does
    keep = false;
    for (;;) {
      if (x.avail() && !deliver(x.data.get() + x.b, x.avail())) return Step::kDone;
      x.b = x.e;
      int k = x.recv_more(fd_);
      if (k < 0) return Step::kDone;
      if (k == 0) break;
    }
  }
  if (!keep || x.avail() > 0) close();  // bytes after the response: the connection's state is unknown
  return Step::kDone;
}

}  // namespace air::http1

namespace air {

std::unique_ptr<Transport> make_plain_transport(const std::string& base_url) {
  const char* force = std::getenv("AIR_HTTP_CLIENT");
  if (force && std::string(force) == "curl") return nullptr;
  http1::Url u;
  if (!http1::parse_url(base_url, u)) return nullptr;
  // A proxy set in the environment is libcurl's to honour (it also reads no_proxy); loopback never goes
  // through one.
  if (!http1::is_loopback(u.host) && http1::proxy_in_env()) return nullptr;
  return std::make_unique<http1::Connection>(std::move(u));
}

}  // namespace air
