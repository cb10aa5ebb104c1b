// The epoll HTTP/1.1 server core, second half: writing responses (ranges, providers, chunked and
// deferred bodies), timeouts, the event loop, binding and the public Server methods.
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/base/error.h"
#include "server/http/server_impl.h"

namespace air::server::http {

namespace {

class OutSink : public DataSink {
 public:
  OutSink(std::string& out, bool chunked) : out_(out), chunked_(chunked) {}
  void write(const char* data, size_t n) override {
    if (n == 0) return;
    if (chunked_) {
      char hex[24];
      std::snprintf(hex, sizeof hex, "%zx\r\n", n);
      out_ += hex;
    }
    out_.append(data, n);
    if (chunked_) out_ += "\r\n";
    written += n;
  }
  void done() override {
    if (chunked_ && !ended) out_ += "0\r\n\r\n";
    ended = true;
  }
  uint64_t written = 0;
  bool ended = false;

 private:
  std::string& out_;
  bool chunked_;
};

}  // namespace

void Server::Impl::begin_response(const std::shared_ptr<Conn>& c) {
  if (c->res->poll) {  // a long poll with nothing yet: wait without a thread
    c->phase = Phase::kDeferred;
    c->deadline = Clock::time_point::max();
    waiters.emplace(c->fd, c);
    return update_interest(c);
  }
  serialize(*c);
  c->phase = Phase::kWrite;
  pump_output(c);
}

void Server::Impl::serialize(Conn& c) {
  Response& res = *c.res;
  std::string head;
  bool provider = static_cast<bool>(res.provider), chunked = static_cast<bool>(res.chunked);
  uint64_t length = res.body.size();
  if (provider) {
    c.send_from = 0;
    c.send_to = length = res.provider_length;
    res.set_header("Accept-Ranges", "bytes");
    uint64_t first = 0, last = 0;
    bool unsatisfiable = false;
    if (c.req->method == "GET" && res.status == 200 &&
        parse_range(c.req->get_header_value("Range"), res.provider_length, first, last, unsatisfiable)) {
      if (unsatisfiable) {
        res.status = 416;
        res.set_header("Content-Range", "bytes */" + std::to_string(res.provider_length));
        provider = false;
        res.provider = nullptr;
        length = 0;
      } else {
        res.status = 206;
        res.set_header("Content-Range", "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                                            std::to_string(res.provider_length));
        c.send_from = first;
        c.send_to = last + 1;
        length = last + 1 - first;
      }
    }
  }
  head += "HTTP/1.1 " + std::to_string(res.status) + " " + reason(res.status) + "\r\n";
  bool explicit_length = c.is_head && res.headers.count("Content-Length");
  for (const auto& [k, v] : res.headers) {
    if (::strcasecmp(k.c_str(), "Content-Length") == 0 && !explicit_length) continue;
    if (::strcasecmp(k.c_str(), "Connection") == 0 || ::strcasecmp(k.c_str(), "Transfer-Encoding") == 0) continue;
    head += k + ": " + v + "\r\n";
  }
  if (chunked) head += "Transfer-Encoding: chunked\r\n";
  else if (!explicit_length) head += "Content-Length: " + std::to_string(length) + "\r\n";
  head += c.keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  c.out += head;
  c.streaming = !c.is_head && (provider || chunked);
  if (!c.is_head && !provider && !chunked) c.out += res.body;
}

// Writes what is queued; refills from a provider; finishes the response when all is sent.
void Server::Impl::pump_output(const std::shared_ptr<Conn>& c) {
  // The write clock: a reader that takes nothing for write_timeout_ms is cut (not a slow but steady one).
  if (c->phase == Phase::kWrite) c->deadline = Clock::now() + std::chrono::milliseconds(limits.write_timeout_ms);
  for (int rounds = 0; rounds < 64; ++rounds) {
    while (c->out_off < c->out.size()) {
      size_t n = 0;
      IoResult r = c->write_some(c->out.data() + c->out_off, c->out.size() - c->out_off, n);
      if (r == IoResult::kError || r == IoResult::kEof) return close_conn(c);
      c->out_off += n;
      if (r == IoResult::kAgain) {
        c->deadline = Clock::now() + std::chrono::milliseconds(limits.write_timeout_ms);
        return update_interest(c);
      }
    }
    c->out.clear();
    c->out_off = 0;
    if (c->phase != Phase::kWrite) return update_interest(c);
    if (!c->streaming) return finish_response(c);
    Response& res = *c->res;
    if (res.provider) {
      if (c->send_from >= c->send_to) {
        c->streaming = false;
        continue;
      }
      OutSink sink(c->out, false);
      uint64_t want = std::min<uint64_t>(c->send_to - c->send_from, 256 << 10);
      if (!res.provider(c->send_from, want, sink) || sink.written == 0) return close_conn(c);
      if (sink.written > want) c->out.resize(c->out.size() - (sink.written - want));
      c->send_from += std::min(sink.written, want);
      continue;
    }
    OutSink sink(c->out, true);
    bool ok = res.chunked(sink);
    if (!ok) return close_conn(c);
    if (sink.ended) c->streaming = false;
    else if (sink.written == 0) {  // nothing yet: wait for wake() or a tick, holding no thread
      c->provider_waiting = true;
      c->deadline = Clock::time_point::max();
      waiters.emplace(c->fd, c);
      return update_interest(c);
    }
  }
  update_interest(c);  // a long body: let other connections have the loop, continue on EPOLLOUT
}

void Server::Impl::finish_response(const std::shared_ptr<Conn>& c) {
  if (!c->keep_alive) {
    if (c->ssl) return close_conn(c);
    ::shutdown(c->fd, SHUT_WR);
    c->phase = Phase::kLinger;
    c->deadline = Clock::now() + std::chrono::seconds(2);
    return update_interest(c);
  }
  end_request(*c);
  c->phase = Phase::kHead;
  c->deadline = Clock::now() + std::chrono::milliseconds(limits.idle_timeout_ms);
  advance(c);  // a pipelined request may be buffered already
}

void Server::Impl::fail(const std::shared_ptr<Conn>& c, int status, const std::string& message) {
  if (!c->req) c->req = std::make_unique<Request>();
  c->keep_alive = false;
  c->res = std::make_unique<Response>();
  on_error(*c->res, status, message);
  c->res->status = status;
  serialize(*c);
  c->phase = Phase::kWrite;
  pump_output(c);
}

void Server::Impl::poll_deferred(const std::shared_ptr<Conn>& c) {
  c->polling = true;
  pool->submit([this, c] {
    bool ready = false;
    try {
      ready = c->res->poll(*c->res);
    } catch (...) {
      ready = true;
      Response& res = *c->res;
      res = Response();
      if (on_exception) on_exception(*c->req, res, std::current_exception());
      else on_error(res, 500, "internal error");
    }
    post([this, c, ready] {
      c->polling = false;
      if (!conns.count(c->fd)) return;
      if (!ready && Clock::now() < c->res->deadline) return;
      waiters.erase(c->fd);
      c->res->poll = nullptr;
      begin_response(c);
    });
  });
}

// Wakes waiting responses: deferred polls run again, chunked providers are asked again.
void Server::Impl::wake_waiters(bool all) {
  std::vector<std::shared_ptr<Conn>> list;
  for (auto& [fd, c] : waiters) list.push_back(c);
  auto now = Clock::now();
  for (auto& c : list) {
    if (!conns.count(c->fd)) {
      waiters.erase(c->fd);
      continue;
    }
    if (c->phase == Phase::kDeferred && !c->polling && (all || now >= c->res->deadline)) poll_deferred(c);
    if (c->phase == Phase::kWrite && c->provider_waiting) {
      c->provider_waiting = false;
      waiters.erase(c->fd);
      pump_output(c);
    }
  }
}

void Server::Impl::on_tick() {
  auto now = Clock::now();
  std::vector<std::shared_ptr<Conn>> expired;
  for (auto& [fd, c] : conns)
    if (now >= c->deadline) expired.push_back(c);
  for (auto& c : expired) {
    if (c->phase == Phase::kHead && c->req) fail(c, 408, "the request head did not arrive in time");
    else if (c->phase == Phase::kBody) fail(c, 408, "the request body did not arrive in time");
    else if (c->phase != Phase::kJob && c->phase != Phase::kStream) close_conn(c);
  }
  bool slow = now >= next_slow_tick;
  if (slow) next_slow_tick = now + std::chrono::seconds(1);
  wake_waiters(slow);  // deadlines every tick; a full re-poll once a second even without wake()
}

// stop(): no new connections; connections between requests, long polls and waiting streams are closed (their
// clients reconnect); a request whose head has arrived is read, handled and answered with
// "Connection: close", so an upload or a log chunk is either committed and acknowledged or never applied;
// the loop ends when none is left, or after drain_timeout_ms.
void Server::Impl::drain_step() {
  auto now = Clock::now();
  if (!drain_started) {
    drain_started = true;
    drain_deadline = now + std::chrono::milliseconds(limits.drain_timeout_ms);
    if (listen_fd >= 0) {
      ::epoll_ctl(epfd, EPOLL_CTL_DEL, listen_fd, nullptr);
      ::close(listen_fd);
      listen_fd = -1;
    }
  }
  std::vector<std::shared_ptr<Conn>> idle;
  for (auto& [fd, c] : conns) {
    c->keep_alive = false;
    bool between = c->phase == Phase::kHandshake || (c->phase == Phase::kHead && !c->req);
    bool waiting = c->phase == Phase::kDeferred || (c->phase == Phase::kWrite && c->provider_waiting);
    if (between || (waiting && !c->polling)) idle.push_back(c);
  }
  for (auto& c : idle) {
    waiters.erase(c->fd);
    close_conn(c);
  }
  if (conns.empty() || now >= drain_deadline) stopping = true;
}

void Server::Impl::run() {
  epoll_event events[512];
  while (!stopping) {
    if (draining) drain_step();
    if (stopping) break;
    int n = ::epoll_wait(epfd, events, 512, 100);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == listen_fd) {
        accept_all();
      } else if (fd == evfd) {
        uint64_t v;
        [[maybe_unused]] auto r = ::read(evfd, &v, sizeof v);
        std::vector<std::function<void()>> jobs;
        {
          std::lock_guard<std::mutex> g(post_mu);
          jobs.swap(posted);
        }
        for (auto& f : jobs) f();
      } else if (auto it = conns.find(fd); it != conns.end()) {
        auto c = it->second;
        on_event(c, events[i].events);
      }
    }
    if (woken.exchange(false)) wake_waiters(true);
    if (Clock::now() >= next_tick) {
      next_tick = Clock::now() + std::chrono::milliseconds(100);
      on_tick();
    }
  }
}

// ---- Server ------------------------------------------------------------------------------------------

Server::Server(Limits limits, TlsFiles tls) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  // Idle keep-alives cost a descriptor each: allow as many as the hard limit permits.
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (!tls.cert.empty() || !tls.key.empty()) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, tls.cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, tls.key.c_str(), SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
      if (ctx) SSL_CTX_free(ctx);
      throw Error("cannot load the TLS certificate or key", "check --cert and --key");
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    impl_->ssl_ctx = ctx;
  }
  impl_->epfd = ::epoll_create1(EPOLL_CLOEXEC);
  impl_->evfd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = impl_->evfd;
  ::epoll_ctl(impl_->epfd, EPOLL_CTL_ADD, impl_->evfd, &e);
}

Server::~Server() = default;

bool Server::tls() const { return impl_->ssl_ctx != nullptr; }

void Server::add(const std::string& method, const std::string& pattern, Handler h, ReaderHandler rh, RouteOptions o) {
  auto r = std::make_unique<Route>();
  r->method = method;
  r->pattern_text = pattern;
  r->pattern = std::regex(pattern);
  r->handler = std::move(h);
  r->reader = std::move(rh);
  r->options = std::move(o);
  impl_->routes.push_back(std::move(r));
}

void Server::Get(const std::string& p, Handler h, RouteOptions o) { add("GET", p, std::move(h), nullptr, std::move(o)); }
void Server::Post(const std::string& p, Handler h, RouteOptions o) { add("POST", p, std::move(h), nullptr, std::move(o)); }
void Server::Put(const std::string& p, Handler h, RouteOptions o) { add("PUT", p, std::move(h), nullptr, std::move(o)); }
void Server::Put(const std::string& p, ReaderHandler h, RouteOptions o) { add("PUT", p, nullptr, std::move(h), std::move(o)); }
void Server::Post(const std::string& p, ReaderHandler h, RouteOptions o) { add("POST", p, nullptr, std::move(h), std::move(o)); }
void Server::Delete(const std::string& p, Handler h, RouteOptions o) { add("DELETE", p, std::move(h), nullptr, std::move(o)); }
void Server::Patch(const std::string& p, Handler h, RouteOptions o) { add("PATCH", p, std::move(h), nullptr, std::move(o)); }
void Server::set_exception_handler(ExceptionHandler h) { impl_->on_exception = std::move(h); }
void Server::set_error_handler(ErrorHandler h) { impl_->on_error = std::move(h); }
void Server::set_observer(Observer o) { impl_->observer = std::move(o); }
void Server::set_identify(Identify f) { impl_->identify = std::move(f); }
std::vector<RouteInfo> Server::routes() const {
  std::vector<RouteInfo> out;
  for (const auto& r : impl_->routes) out.push_back({r->method, r->pattern_text});
  return out;
}

int Server::bind(const std::string& host, int port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0) return errno = EADDRNOTAVAIL, -1;
  int fd = -1, err = EADDRNOTAVAIL;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;  // SO_REUSEADDR only (TIME_WAIT); never SO_REUSEPORT, so a port has one listener
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 4096) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) return errno = err, -1;
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  int bound = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  impl_->listen_fd = fd;
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = fd;
  ::epoll_ctl(impl_->epfd, EPOLL_CTL_ADD, fd, &e);
  return bound;
}

void Server::listen() {
  impl_->pool = std::make_unique<Pool>(impl_->limits.workers);
  impl_->run();
  impl_->pool.reset();  // handlers in flight finish before the caller tears down what they use
  impl_->waiters.clear();
  impl_->conns.clear();
}

void Server::stop() {
  impl_->draining = true;
  uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(impl_->evfd, &one, sizeof one);
}

void Server::wake() {
  impl_->woken = true;
  uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(impl_->evfd, &one, sizeof one);
}

}  // namespace air::server::http
