// The epoll HTTP/1.1 server core (server/http/server.h): accept, read heads and bodies, dispatch
// handlers to the pool, write responses, enforce timeouts and limits. One I/O thread; no thread per
// connection.
#include "server/http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "server/http/server_impl.h"

namespace air::server::http {


// ---- Request/Response helpers ------------------------------------------------------------------------

void Response::set_header(const std::string& key, const std::string& value) {
  headers.erase(key);
  headers.emplace(key, value);
}
void Response::set_content(std::string content, const std::string& content_type) {
  body = std::move(content);
  set_header("Content-Type", content_type);
}
void Response::set_content_provider(uint64_t length, const std::string& content_type, ContentProvider p) {
  provider_length = length;
  provider = std::move(p);
  set_header("Content-Type", content_type);
}
void Response::set_chunked_content_provider(const std::string& content_type, ChunkedProvider p) {
  chunked = std::move(p);
  set_header("Content-Type", content_type);
}
void Response::defer(Clock::time_point d, std::function<bool(Response&)> p) {
  deadline = d;
  poll = std::move(p);
}

// ---- Conn transport ----------------------------------------------------------------------------------

Conn::~Conn() {
  if (ssl) SSL_free(ssl);
  if (fd >= 0) ::close(fd);
}

void Conn::reset_request() {
  req.reset();
  body_filled = 0;
  res.reset();
  route = nullptr;
  chunked_body = gated = expect_continue = is_head = body_complete = body_too_large = false;
  content_length = 0;
  decoder = ChunkedDecoder();
  send_from = send_to = 0;
  streaming = provider_waiting = chunked_done = polling = false;
}

IoResult Conn::read_some(char* buf, size_t cap, size_t& n) {
  n = 0;
  if (ssl) {
    ERR_clear_error();
    int r = SSL_read(ssl, buf, static_cast<int>(cap));
    if (r > 0) return n = static_cast<size_t>(r), IoResult::kOk;
    int e = SSL_get_error(ssl, r);
    ssl_wants_write = e == SSL_ERROR_WANT_WRITE;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return IoResult::kAgain;
    return e == SSL_ERROR_ZERO_RETURN ? IoResult::kEof : IoResult::kError;
  }
  ssize_t r = ::recv(fd, buf, cap, 0);
  if (r > 0) return n = static_cast<size_t>(r), IoResult::kOk;
  if (r == 0) return IoResult::kEof;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? IoResult::kAgain : IoResult::kError;
}

IoResult Conn::write_some(const char* buf, size_t len, size_t& n) {
  n = 0;
  if (ssl) {
    ERR_clear_error();
    int r = SSL_write(ssl, buf, static_cast<int>(std::min<size_t>(len, 1 << 30)));
    if (r > 0) return n = static_cast<size_t>(r), IoResult::kOk;
    int e = SSL_get_error(ssl, r);
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? IoResult::kAgain : IoResult::kError;
  }
  ssize_t r = ::send(fd, buf, len, MSG_NOSIGNAL);
  if (r >= 0) return n = static_cast<size_t>(r), IoResult::kOk;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? IoResult::kAgain : IoResult::kError;
}

// ---- Server::Impl ------------------------------------------------------------------------------------


Server::Impl::~Impl() {
  pool.reset();
  waiters.clear();
  conns.clear();
  if (listen_fd >= 0) ::close(listen_fd);
  if (epfd >= 0) ::close(epfd);
  if (evfd >= 0) ::close(evfd);
  if (ssl_ctx) SSL_CTX_free(ssl_ctx);
}

void Server::Impl::post(std::function<void()> f) {
  {
    std::lock_guard<std::mutex> g(post_mu);
    posted.push_back(std::move(f));
  }
  uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(evfd, &one, sizeof one);
}

void Server::Impl::update_interest(const std::shared_ptr<Conn>& c) {
  int ev = 0;
  bool pool_owned = c->phase == Phase::kJob || c->phase == Phase::kStream;
  if (!pool_owned) {
    if (c->phase == Phase::kHandshake || c->phase == Phase::kHead || c->phase == Phase::kBody ||
        c->phase == Phase::kLinger)
      ev |= EPOLLIN;
    if (c->out_off < c->out.size() || c->ssl_wants_write ||
        (c->phase == Phase::kWrite && c->streaming && !c->provider_waiting))
      ev |= EPOLLOUT;
  }
  if (ev == c->epoll_events) return;
  epoll_event e{};
  e.events = static_cast<uint32_t>(ev);
  e.data.fd = c->fd;
  ::epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &e);
  c->epoll_events = ev;
}

void Server::Impl::close_conn(const std::shared_ptr<Conn>& c) {
  if (c->fd < 0) return;
  ::epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, nullptr);
  conns.erase(c->fd);
  if (c->phase == Phase::kJob || c->phase == Phase::kStream) return;  // the job's completion closes it
  ::shutdown(c->fd, SHUT_RDWR);
}

void Server::Impl::accept_all() {
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or out of descriptors: the backlog waits
    if (conns.size() >= limits.max_connections) {
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_shared<Conn>();
    c->fd = fd;
    c->deadline = Clock::now() + std::chrono::milliseconds(limits.idle_timeout_ms);
    if (ssl_ctx) {
      c->ssl = SSL_new(ssl_ctx);
      SSL_set_fd(c->ssl, fd);
      SSL_set_accept_state(c->ssl);
      SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
      c->phase = Phase::kHandshake;
      c->deadline = Clock::now() + std::chrono::milliseconds(limits.header_timeout_ms);
    }
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    c->epoll_events = EPOLLIN;
    ::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e);
    conns.emplace(fd, std::move(c));
  }
}

void Server::Impl::do_handshake(const std::shared_ptr<Conn>& c) {
  ERR_clear_error();
  int r = SSL_do_handshake(c->ssl);
  if (r == 1) {
    c->ssl_wants_write = false;
    c->phase = Phase::kHead;
    c->deadline = Clock::now() + std::chrono::milliseconds(limits.idle_timeout_ms);
    return advance(c);
  }
  int e = SSL_get_error(c->ssl, r);
  if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return close_conn(c);
  c->ssl_wants_write = e == SSL_ERROR_WANT_WRITE;
  update_interest(c);
}

// Reads what the socket has. False: the peer closed or failed (the connection is closed).
bool Server::Impl::fill_input(const std::shared_ptr<Conn>& c) {
  char buf[64 << 10];
  for (int i = 0; i < 16; ++i) {  // bounded, so that one fast sender cannot starve the others
    size_t n = 0;
    IoResult r = c->read_some(buf, sizeof buf, n);
    if (r == IoResult::kAgain) return true;
    if (r != IoResult::kOk) {
      close_conn(c);
      return false;
    }
    c->in.append(buf, n);
    if (c->phase == Phase::kHead && c->in.size() > limits.max_header_bytes + (64 << 10)) return true;
    if (c->phase == Phase::kBody && c->in.size() > (1 << 20)) return true;
  }
  return true;
}

void Server::Impl::on_event(const std::shared_ptr<Conn>& c, uint32_t events) {
  if (c->phase == Phase::kHandshake) return do_handshake(c);
  if (c->phase == Phase::kLinger) {
    char buf[64 << 10];
    for (;;) {
      ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return close_conn(c);
      if (n < 0) return;
    }
  }
  if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) return close_conn(c);
  if (events & EPOLLOUT) {
    pump_output(c);
    if (c->fd < 0 || !conns.count(c->fd)) return;
  }
  if (events & EPOLLIN && c->phase == Phase::kBody && !c->chunked_body) return read_body(c);
  if (events & EPOLLIN && (c->phase == Phase::kHead || c->phase == Phase::kBody)) {
    if (!fill_input(c)) return;
    advance(c);
  }
}

// Moves a connection forward with the input it has buffered.
void Server::Impl::advance(const std::shared_ptr<Conn>& c) {
  if (c->phase == Phase::kHead) {
    if (c->in.empty()) return update_interest(c);
    if (!c->req) {  // the first byte of a request starts the header clock
      c->req = std::make_unique<Request>();
      c->deadline = Clock::now() + std::chrono::milliseconds(limits.header_timeout_ms);
    }
    size_t used = 0;
    std::string why;
    HeadStatus s = parse_head(c->in, limits.max_header_bytes, limits.max_headers, *c->req, used, why);
    if (s == HeadStatus::kIncomplete) return update_interest(c);
    if (s == HeadStatus::kBad) return fail(c, 400, why);
    if (s == HeadStatus::kTooLarge) return fail(c, 431, why);
    c->in.erase(0, used);
    return start_request(c);
  }
  if (c->phase == Phase::kBody) return read_body(c);
  update_interest(c);
}

void Server::Impl::start_request(const std::shared_ptr<Conn>& c) {
  Request& req = *c->req;
  c->is_head = req.method == "HEAD";
  std::string conn_hdr = req.get_header_value("Connection");
  c->keep_alive = req.version == "HTTP/1.1" ? ::strcasecmp(conn_hdr.c_str(), "close") != 0
                                            : ::strcasecmp(conn_hdr.c_str(), "keep-alive") == 0;
  bool path_known = false;
  for (const auto& r : routes) {
    if (!std::regex_match(req.path, req.matches, r->pattern)) continue;
    path_known = true;
    if (r->method == req.method || (c->is_head && r->method == "GET")) {
      c->route = r.get();
      break;
    }
  }
  if (!c->route) return fail(c, path_known ? 405 : 404, path_known ? "method not allowed" : "not found");
  std::string te = req.get_header_value("Transfer-Encoding");
  uint64_t max_body = c->route->options.max_body;
  if (!te.empty()) {
    if (::strcasecmp(te.c_str(), "chunked") != 0) return fail(c, 501, "unsupported Transfer-Encoding " + te);
    c->chunked_body = true;
  } else if (req.has_header("Content-Length")) {
    std::string v = req.get_header_value("Content-Length");
    if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos)
      return fail(c, 400, "malformed Content-Length");
    c->content_length = std::stoull(v);
    if (c->content_length > max_body)
      return fail(c, 413, "the request body (" + v + " bytes) is larger than this endpoint accepts (" +
                              std::to_string(max_body) + " bytes)");
  }
  c->expect_continue = ::strcasecmp(req.get_header_value("Expect").c_str(), "100-continue") == 0;
  bool has_body = c->chunked_body || c->content_length > 0;
  if (c->route->reader) return dispatch_stream(c);
  c->body_complete = !has_body;
  if (has_body && !c->chunked_body && c->content_length >= (64 << 10) && !spare_bodies.empty()) {
    req.body = std::move(spare_bodies.back());
    spare_bodies.pop_back();
  }
  if (has_body) {
    c->phase = Phase::kBody;
    read_body(c);  // what arrived with the head
    if (c->phase != Phase::kBody || !conns.count(c->fd)) return;
    if (c->route->options.gate && !c->gated) return dispatch(c, true);  // token before body
    if (c->expect_continue) c->out += "HTTP/1.1 100 Continue\r\n\r\n";
    c->deadline = Clock::now() + std::chrono::milliseconds(limits.body_timeout_ms);
    return update_interest(c);
  }
  dispatch(c, false);
}

void Server::Impl::read_body(const std::shared_ptr<Conn>& c) {
  uint64_t max_body = c->route->options.max_body;
  Request& req = *c->req;
  if (c->chunked_body) {
    size_t used = c->decoder.feed(c->in, req.body);
    c->in.erase(0, used);
    if (c->decoder.decoded() > max_body)
      return fail(c, 413, "the request body is larger than this endpoint accepts (" + std::to_string(max_body) + " bytes)");
    if (c->decoder.state() == ChunkedDecoder::State::kBad) return fail(c, 400, "malformed chunked body");
    c->body_complete = c->decoder.state() == ChunkedDecoder::State::kDone;
  } else {
    if (!read_fixed_body(c)) return;
    c->body_complete = c->body_filled == c->content_length;
  }
  if (c->body_complete) return dispatch(c, false);  // runs the gate first when it has not run yet
  c->deadline = Clock::now() + std::chrono::milliseconds(limits.body_timeout_ms);
  update_interest(c);
}

bool Server::Impl::read_fixed_body(const std::shared_ptr<Conn>& c) {
  std::string& body = c->req->body;
  // The body grows with what arrives (at most twice it), not to what Content-Length claims at once.
  auto room = [&](uint64_t want) {
    if (body.size() - c->body_filled >= want) return;
    uint64_t size = std::max<uint64_t>({c->body_filled + want, 2 * body.size(), 256 << 10});
    body.resize(static_cast<size_t>(std::min<uint64_t>(size, c->content_length)));
  };
  size_t n = static_cast<size_t>(std::min<uint64_t>(c->content_length - c->body_filled, c->in.size()));
  if (n) {
    room(n);
    std::memcpy(body.data() + c->body_filled, c->in.data(), n);
    c->body_filled += n;
    c->in.erase(0, n);
  }
  // Straight from the socket into the body: no copy through a buffer. Bounded per call (1 MiB), so that
  // one fast sender cannot starve the others; the gate, when the route has one, runs before any of this.
  if (c->route->options.gate && !c->gated) return true;
  for (size_t got_total = 0; c->body_filled < c->content_length && got_total < (1 << 20);) {
    room(std::min<uint64_t>(c->content_length - c->body_filled, 64 << 10));
    size_t got = 0;
    IoResult r = c->read_some(body.data() + c->body_filled, body.size() - c->body_filled, got);
    if (r == IoResult::kAgain) break;
    if (r != IoResult::kOk) {
      close_conn(c);
      return false;
    }
    c->body_filled += got;
    got_total += got;
  }
  return true;  // complete: room() never grows the body past Content-Length, so its size is exactly that
}

void Server::Impl::end_request(Conn& c) {
  if (c.req && c.req->body.capacity() >= (64 << 10) && c.req->body.capacity() <= kSpareBodyBytes &&
      spare_bodies.size() < kSpareBodies) {
    c.req->body.clear();
    spare_bodies.push_back(std::move(c.req->body));
  }
  c.reset_request();
}

void Server::Impl::run_handler(Conn& c, Request& req, Response& res, const ContentReader* reader) {
  identify_caller(req);
  try {
    if (!c.gated && c.route->options.gate && !c.route->options.gate(req, res)) return observe(req, res);
    c.gated = true;
    if (reader) c.route->reader(req, res, *reader);
    else c.route->handler(req, res);
  } catch (...) {
    res = Response();
    if (on_exception) on_exception(req, res, std::current_exception());
    else on_error(res, 500, "internal error");
  }
  observe(req, res);
}

void Server::Impl::identify_caller(Request& req) {
  if (req.identified || !identify) return;
  req.identified = true;
  try {
    req.caller = identify(req);
  } catch (...) {
    req.caller.clear();  // the observer then names no one rather than failing the request
  }
}

void Server::Impl::observe(const Request& req, const Response& res) {
  if (!observer) return;
  try {
    observer(req, res);
  } catch (...) {
    // The answer stands; an observer's failure (a full disk under the audit log) must not change it.
  }
}

// gate_only: run the gate, then come back to read the body; else gate (if not yet) + handler.
void Server::Impl::dispatch(const std::shared_ptr<Conn>& c, bool gate_only) {
  c->phase = Phase::kJob;
  c->res = std::make_unique<Response>();
  update_interest(c);
  pool->submit([this, c, gate_only] {
    bool passed = true;
    if (gate_only) {
      identify_caller(*c->req);
      try {
        passed = c->route->options.gate(*c->req, *c->res);
      } catch (...) {
        passed = false;
        *c->res = Response();
        if (on_exception) on_exception(*c->req, *c->res, std::current_exception());
      }
      if (!passed) observe(*c->req, *c->res);
    } else {
      run_handler(*c, *c->req, *c->res, nullptr);
    }
    post([this, c, gate_only, passed] {
      if (!conns.count(c->fd)) return close_conn(c), void();
      if (gate_only && passed) {
        c->gated = true;
        c->res.reset();
        c->phase = Phase::kBody;
        if (c->expect_continue) c->out += "HTTP/1.1 100 Continue\r\n\r\n";
        return read_body(c);
      }
      if (gate_only || !c->body_complete) c->keep_alive = false;  // the body was not read
      begin_response(c);
    });
  });
}

void Server::Impl::dispatch_stream(const std::shared_ptr<Conn>& c) {
  c->phase = Phase::kStream;
  c->res = std::make_unique<Response>();
  update_interest(c);
  pool->submit([this, c] {
    bool started = false;
    ContentReader reader = [&](const ContentSink& sink) {
      if (!started && c->expect_continue) {
        std::string cont = "HTTP/1.1 100 Continue\r\n\r\n";
        size_t off = 0;
        while (off < cont.size()) {
          size_t n = 0;
          IoResult r = c->write_some(cont.data() + off, cont.size() - off, n);
          if (r == IoResult::kError) return false;
          off += n;
          if (r == IoResult::kAgain) {
            pollfd p{c->fd, POLLOUT, 0};
            if (::poll(&p, 1, limits.write_timeout_ms) <= 0) return false;
          }
        }
      }
      started = true;
      return stream_read(*c, sink);
    };
    run_handler(*c, *c->req, *c->res, &reader);
    post([this, c] {
      if (!conns.count(c->fd)) return close_conn(c), void();
      if (c->body_too_large) {
        c->res = std::make_unique<Response>();
        on_error(*c->res, 413, "the request body is larger than this endpoint accepts");
      }
      if (!c->body_complete) c->keep_alive = false;
      begin_response(c);
    });
  });
}

// On a pool thread: feeds the body to sink, reading the socket with the body timeout.
bool Server::Impl::stream_read(Conn& c, const ContentSink& sink) {
  uint64_t max_body = c.route->options.max_body, delivered = 0;
  std::string piece;
  for (;;) {
    piece.clear();
    if (c.chunked_body) {
      size_t used = c.decoder.feed(c.in, piece);
      c.in.erase(0, used);
      if (c.decoder.state() == ChunkedDecoder::State::kBad) return false;
    } else {
      size_t n = static_cast<size_t>(std::min<uint64_t>(c.content_length - delivered, c.in.size()));
      piece.assign(c.in, 0, n);
      c.in.erase(0, n);
    }
    delivered += piece.size();
    if (delivered > max_body) return c.body_too_large = true, false;
    if (!piece.empty() && !sink(piece.data(), piece.size())) return false;
    bool done = c.chunked_body ? c.decoder.state() == ChunkedDecoder::State::kDone : delivered == c.content_length;
    if (done) return c.body_complete = true, true;
    char buf[256 << 10];
    size_t n = 0;
    IoResult r = c.read_some(buf, sizeof buf, n);
    if (r == IoResult::kOk) c.in.append(buf, n);
    else if (r != IoResult::kAgain) return false;
    else {
      pollfd p{c.fd, static_cast<short>(c.ssl_wants_write ? POLLOUT : POLLIN), 0};
      if (::poll(&p, 1, limits.body_timeout_ms) <= 0) return false;
    }
  }
}

}  // namespace air::server::http
