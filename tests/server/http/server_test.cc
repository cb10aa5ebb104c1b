// The epoll HTTP server core on loopback with raw sockets, as a hostile client would talk to it: limits
// answered before the body, slow senders cut with 408, idle and slow connections costing no handler,
// ranges, streamed bodies and deferred responses (issue 22).
#include <arpa/inet.h>
#include <openssl/ssl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "server/http/parse.h"
#include "server/http/server.h"

using namespace air::server;
using Clock = std::chrono::steady_clock;

namespace {

struct TestServer {
  explicit TestServer(http::Limits limits = test_limits()) : srv(limits) {}
  static http::Limits test_limits() {
    http::Limits l;
    l.header_timeout_ms = 400;
    l.body_timeout_ms = 400;
    l.workers = 2;
    return l;
  }
  void start() {
    port = srv.bind("127.0.0.1", 0);
    REQUIRE(port > 0);
    thread = std::thread([this] { srv.listen(); });
  }
  ~TestServer() {
    srv.stop();
    if (thread.joinable()) thread.join();
  }
  http::Server srv;
  int port = 0;
  std::thread thread;
};

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

void send_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Reads one response (head + Content-Length body, or until close), waiting at most timeout_ms.
std::string read_response(int fd, int timeout_ms = 3000) {
  std::string got;
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto head_end = got.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      if (got.rfind("HTTP/1.1 1", 0) == 0) return got.substr(0, head_end + 4);  // 100 Continue
      auto cl = got.find("Content-Length: ");
      if (cl != std::string::npos && cl < head_end) {
        size_t n = std::stoul(got.substr(cl + 16));
        if (got.size() >= head_end + 4 + n) return got.substr(0, head_end + 4 + n);
      }
    }
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return got;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return got;
    char buf[65536];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

// Reads whatever arrives until `done(got)` or timeout_ms pass (responses to pipelined requests, however
// they are split into segments).
template <typename Done>
std::string read_until(int fd, Done done, int timeout_ms = 5000) {
  std::string got;
  for (auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms); !done(got) && Clock::now() < deadline;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[65536];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

std::string roundtrip(int port, const std::string& request) {
  int fd = connect_to(port);
  send_all(fd, request);
  std::string r = read_response(fd);
  ::close(fd);
  return r;
}

std::string status_line(const std::string& r) { return r.substr(0, r.find("\r\n")); }
std::string body_of(const std::string& r) { return r.substr(r.find("\r\n\r\n") + 4); }

}  // namespace

TEST_CASE("http: ranges are clamped, and unsatisfiable ones say so", "[http]") {
  uint64_t first = 0, last = 0;
  bool unsat = false;
  CHECK(http::parse_range("bytes=0-99", 2048, first, last, unsat));
  CHECK((first == 0 && last == 99 && !unsat));
  CHECK(http::parse_range("bytes=2000-", 2048, first, last, unsat));
  CHECK((first == 2000 && last == 2047));
  CHECK(http::parse_range("bytes=-100", 2048, first, last, unsat));
  CHECK((first == 1948 && last == 2047));
  CHECK(http::parse_range("bytes=100-999999", 2048, first, last, unsat));
  CHECK(last == 2047);
  // Issue 22, finding 4: this was answered 206 with Content-Length 18446743073709553674.
  CHECK(http::parse_range("bytes=999999999999-", 2048, first, last, unsat));
  CHECK(unsat);
  CHECK_FALSE(http::parse_range("bytes=5-1", 2048, first, last, unsat));
  CHECK_FALSE(http::parse_range("bytes=0-1,5-6", 2048, first, last, unsat));
  CHECK_FALSE(http::parse_range("items=0-1", 2048, first, last, unsat));
}

TEST_CASE("http: request heads and chunked bodies parse, with limits", "[http]") {
  http::Request req;
  size_t used = 0;
  std::string why;
  std::string head = "GET /a%20b?x=1&y=two+words HTTP/1.1\r\nHost: h\r\nX-K:  v \r\n\r\nrest";
  REQUIRE(http::parse_head(head, 1024, 10, req, used, why) == http::HeadStatus::kDone);
  CHECK(req.path == "/a b");
  CHECK(req.get_param_value("y") == "two words");
  CHECK(req.get_header_value("x-k") == "v");
  CHECK(head.substr(used) == "rest");
  http::Request r2;
  CHECK(http::parse_head("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 1024, 2, r2, used, why) ==
        http::HeadStatus::kTooLarge);
  http::Request r3;
  CHECK(http::parse_head(std::string(2000, 'G'), 1024, 10, r3, used, why) == http::HeadStatus::kTooLarge);
  http::Request r4;
  CHECK(http::parse_head("GET / HTTP/1.1\r\nno colon\r\n\r\n", 1024, 10, r4, used, why) == http::HeadStatus::kBad);

  http::ChunkedDecoder d;
  std::string out;
  std::string in = "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";
  CHECK(d.feed(in.substr(0, 7), out) == 7);  // the size line, then part of the data
  CHECK(out == "hell");
  CHECK(d.feed(in.substr(7), out) == in.size() - 7);
  CHECK(out == "hello world");
  CHECK(d.state() == http::ChunkedDecoder::State::kDone);
}

TEST_CASE("http: keep-alive, 404 and 405, a body past its limit refused from the headers", "[http]") {
  TestServer t;
  std::atomic<int> handled{0};
  t.srv.Get("/hello", [](const http::Request&, http::Response& res) { res.set_content("hi", "text/plain"); });
  t.srv.Post("/small", [&](const http::Request& req, http::Response& res) {
    ++handled;
    res.set_content(std::to_string(req.body.size()), "text/plain");
  }, {100, nullptr});
  t.start();

  int fd = connect_to(t.port);
  send_all(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string both = read_until(fd, [](const std::string& got) { return got.find("hi", got.find("hi") + 1) != std::string::npos; });
  CHECK(status_line(both) == "HTTP/1.1 200 OK");
  CHECK(both.find("hi", both.find("hi") + 1) != std::string::npos);  // a pipelined second request answered
  ::close(fd);

  CHECK(status_line(roundtrip(t.port, "GET /nothing HTTP/1.1\r\n\r\n")) == "HTTP/1.1 404 Not Found");
  CHECK(status_line(roundtrip(t.port, "DELETE /hello HTTP/1.1\r\n\r\n")) == "HTTP/1.1 405 Method Not Allowed");
  CHECK(body_of(roundtrip(t.port, "POST /small HTTP/1.1\r\nContent-Length: 5\r\n\r\n12345")) == "5");
  // Declared too large: answered at once, without sending a byte of the body.
  auto start = Clock::now();
  CHECK(status_line(roundtrip(t.port, "POST /small HTTP/1.1\r\nContent-Length: 101\r\n\r\n")) ==
        "HTTP/1.1 413 Content Too Large");
  CHECK(Clock::now() - start < std::chrono::milliseconds(300));
  // Chunked: counted as it arrives.
  std::string chunk = "40\r\n" + std::string(64, 'x') + "\r\n";
  CHECK(status_line(roundtrip(t.port, "POST /small HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk)) ==
        "HTTP/1.1 413 Content Too Large");
  CHECK(handled == 1);
  // Too many header lines, and a head too large.
  std::string many = "GET /hello HTTP/1.1\r\n";
  for (int i = 0; i < 100; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
  CHECK(status_line(roundtrip(t.port, many + "\r\n")) == "HTTP/1.1 431 Request Header Fields Too Large");
}

TEST_CASE("http: Content-Length bodies arrive whole at any pace, and a reused buffer holds only its own body",
          "[http]") {
  // Bodies are read from the socket straight into the request's buffer, and finished requests' buffers
  // are kept for the next ones: every body must still be exactly what was sent, pipelined or in pieces.
  TestServer t;
  auto fnv = [](const std::string& b) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : b) h = (h ^ ch) * 1099511628211ull;
    return std::to_string(b.size()) + ":" + std::to_string(h);
  };
  t.srv.Post("/sum", [&](const http::Request& req, http::Response& res) { res.set_content(fnv(req.body), "text/plain"); },
             {8 << 20, nullptr});
  t.start();
  std::mt19937 rng(7);
  auto body_of_size = [&](size_t n) {
    std::string b(n, '\0');
    for (auto& ch : b) ch = static_cast<char>(rng());
    return b;
  };
  int fd = connect_to(t.port);
  // Large, then smaller ones on the same connection (the buffer of the first is reused for the next).
  for (size_t n : {size_t{3} << 20, size_t{1} << 20, size_t{300000}, size_t{70000}, size_t{5}, size_t{2} << 20}) {
    std::string b = body_of_size(n);
    std::string req = "POST /sum HTTP/1.1\r\nContent-Length: " + std::to_string(n) + "\r\n\r\n" + b;
    for (size_t off = 0; off < req.size();) {  // in uneven pieces, some with a pause between
      size_t piece = std::min(req.size() - off, size_t{1} + rng() % 400000);
      send_all(fd, req.substr(off, piece));
      off += piece;
      if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::string r = read_response(fd, 5000);
    INFO("body of " << n << " bytes");
    CHECK(status_line(r) == "HTTP/1.1 200 OK");
    CHECK(body_of(r) == fnv(b));
  }
  // Two requests in one write: the second head right after the first body.
  std::string a = body_of_size(100000), b = body_of_size(90000);
  send_all(fd, "POST /sum HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" + a +
                   "POST /sum HTTP/1.1\r\nContent-Length: 90000\r\n\r\n" + b);
  std::string both = read_until(fd, [&](const std::string& got) { return got.find(fnv(b)) != std::string::npos; });
  size_t first = both.find(fnv(a));
  CHECK(first != std::string::npos);
  CHECK(both.find(fnv(b), first == std::string::npos ? 0 : first) != std::string::npos);
  ::close(fd);
}

TEST_CASE("http: the gate answers before the body is read, 100-continue only after it", "[http]") {
  TestServer t;
  std::atomic<int> bodies{0};
  http::Gate gate = [](const http::Request& req, http::Response& res) {
    if (req.get_header_value("Authorization") == "Bearer good") return true;
    res.status = 401;
    res.set_content("no", "text/plain");
    return false;
  };
  t.srv.Post("/upload", [&](const http::Request&, http::Response& res) {
    ++bodies;
    res.set_content("ok", "text/plain");
  }, {1 << 20, gate});
  t.start();
  // 1 MiB declared, nothing sent: a bad token is refused at once.
  std::string r = roundtrip(t.port, "POST /upload HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n");
  CHECK(status_line(r) == "HTTP/1.1 401 Unauthorized");
  CHECK(r.find("Connection: close") != std::string::npos);
  int fd = connect_to(t.port);
  send_all(fd, "POST /upload HTTP/1.1\r\nAuthorization: Bearer good\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
  CHECK(status_line(read_response(fd)) == "HTTP/1.1 100 Continue");
  send_all(fd, "abc");
  CHECK(body_of(read_response(fd)) == "ok");
  ::close(fd);
  CHECK(bodies == 1);
}

TEST_CASE("http: slow senders get 408, idle and slow connections do not delay others", "[http]") {
  TestServer t;
  t.srv.Get("/fast", [](const http::Request&, http::Response& res) { res.set_content("fast", "text/plain"); });
  t.srv.Post("/p", [](const http::Request&, http::Response& res) { res.set_content("p", "text/plain"); });
  t.start();
  int slow = connect_to(t.port);
  send_all(slow, "GET /fast HTTP/1.1\r\nX-Slow: ");
  int slow_body = connect_to(t.port);
  send_all(slow_body, "POST /p HTTP/1.1\r\nContent-Length: 10\r\n\r\nab");
  // 300 idle and half-sent connections, far more than the 2 handler threads.
  std::vector<int> crowd;
  for (int i = 0; i < 300; ++i) {
    crowd.push_back(connect_to(t.port));
    if (i % 2) send_all(crowd.back(), "GET /fast HTTP/1.1\r\nHo");
  }
  auto start = Clock::now();
  CHECK(body_of(roundtrip(t.port, "GET /fast HTTP/1.1\r\n\r\n")) == "fast");
  CHECK(Clock::now() - start < std::chrono::milliseconds(100));
  CHECK(status_line(read_response(slow)) == "HTTP/1.1 408 Request Timeout");
  CHECK(status_line(read_response(slow_body)) == "HTTP/1.1 408 Request Timeout");
  ::close(slow);
  ::close(slow_body);
  for (int fd : crowd) ::close(fd);
}

TEST_CASE("http: file ranges, streamed uploads, chunked and deferred responses", "[http]") {
  TestServer t;
  std::string blob(2048, 'b');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>('a' + i % 26);
  t.srv.Get("/blob", [&](const http::Request&, http::Response& res) {
    res.set_content_provider(blob.size(), "application/octet-stream", [&](uint64_t off, uint64_t n, http::DataSink& s) {
      s.write(blob.data() + off, static_cast<size_t>(n));
      return true;
    });
  });
  std::string received;
  t.srv.Put("/up", [&](const http::Request&, http::Response& res, const http::ContentReader& read) {
    bool ok = read([&](const char* d, size_t n) { return received.append(d, n), true; });
    res.set_content(ok ? "stored" : "partial", "text/plain");
  }, {1 << 20, nullptr});
  std::atomic<bool> ready{false};
  t.srv.Get("/wait", [&](const http::Request&, http::Response& res) {
    res.defer(Clock::now() + std::chrono::seconds(5), [&](http::Response& r) {
      r.set_content(ready ? "ready" : "timeout", "text/plain");
      return ready.load();
    });
  });
  int ticks = 0;
  t.srv.Get("/events", [&](const http::Request&, http::Response& res) {
    res.set_chunked_content_provider("text/event-stream", [&](http::DataSink& s) {
      if (!ready) return true;  // nothing yet: waits for wake()
      s.write("data: " + std::to_string(++ticks) + "\n\n");
      if (ticks == 2) s.done();
      return true;
    });
  });
  t.start();

  std::string r = roundtrip(t.port, "GET /blob HTTP/1.1\r\nRange: bytes=10-19\r\n\r\n");
  CHECK(status_line(r) == "HTTP/1.1 206 Partial Content");
  CHECK(r.find("Content-Range: bytes 10-19/2048") != std::string::npos);
  CHECK(body_of(r) == blob.substr(10, 10));
  r = roundtrip(t.port, "GET /blob HTTP/1.1\r\nRange: bytes=999999999999-\r\n\r\n");
  CHECK(status_line(r) == "HTTP/1.1 416 Range Not Satisfiable");
  CHECK(r.find("Content-Range: bytes */2048") != std::string::npos);
  CHECK(r.find("Content-Length: 0") != std::string::npos);
  CHECK(body_of(roundtrip(t.port, "GET /blob HTTP/1.1\r\n\r\n")) == blob);

  CHECK(body_of(roundtrip(t.port, "PUT /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")) ==
        "stored");
  CHECK(received == "abcde");

  int waiting = connect_to(t.port);
  send_all(waiting, "GET /wait HTTP/1.1\r\n\r\n");
  int events = connect_to(t.port);
  send_all(events, "GET /events HTTP/1.1\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Both wait holding no thread: with 2 workers, other requests are still served at once.
  CHECK(body_of(roundtrip(t.port, "GET /blob HTTP/1.1\r\nRange: bytes=0-0\r\n\r\n")) == "a");
  ready = true;
  auto start = Clock::now();
  t.srv.wake();
  CHECK(body_of(read_response(waiting)) == "ready");
  CHECK(Clock::now() - start < std::chrono::milliseconds(500));
  std::string ev = read_response(events, 1500);
  CHECK(ev.find("Transfer-Encoding: chunked") != std::string::npos);
  CHECK(ev.find("data: 1") != std::string::npos);
  ::close(waiting);
  ::close(events);
}

TEST_CASE("http: HTTPS with --cert/--key", "[http]") {
  char dir[] = "/tmp/air-tls-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  std::string d = dir;
  std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -keyout " + d +
                    "/k.pem -out " + d + "/c.pem >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    WARN("skipped: no openssl command");
    return;
  }
  {
    http::Server srv(TestServer::test_limits(), http::TlsFiles{d + "/c.pem", d + "/k.pem"});
    srv.Get("/s", [](const http::Request&, http::Response& res) { res.set_content("secure", "text/plain"); });
    int port = srv.bind("127.0.0.1", 0);
    std::thread t([&] { srv.listen(); });
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    int fd = connect_to(port);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    REQUIRE(SSL_connect(ssl) == 1);
    std::string req = "GET /s HTTP/1.1\r\n\r\nGET /s HTTP/1.1\r\nConnection: close\r\n\r\n";
    SSL_write(ssl, req.data(), static_cast<int>(req.size()));
    std::string got;
    char buf[4096];
    int n;
    while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
    CHECK(got.find("secure") != std::string::npos);
    CHECK(got.find("secure", got.find("secure") + 1) != std::string::npos);  // two answers on one connection
    SSL_free(ssl);
    ::close(fd);
    SSL_CTX_free(ctx);
    srv.stop();
    t.join();
  }
  CHECK_THROWS_WITH(http::Server(TestServer::test_limits(), http::TlsFiles{d + "/k.pem", d + "/c.pem"}),
                    "cannot load the TLS certificate or key");
  std::filesystem::remove_all(d);
}

// stop() drains (a SIGTERM'd workspace): the request in flight is answered (Connection: close), an idle
// keep-alive connection is closed, no new connection is taken, and listen() returns once none is left.
TEST_CASE("http: stop drains: requests in flight are answered, idle connections closed, no new ones", "[http]") {
  TestServer t;
  std::atomic<bool> in_handler{false};
  t.srv.Post("/slow", [&](const http::Request& req, http::Response& res) {
    in_handler = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    res.set_content("stored " + std::to_string(req.body.size()), "text/plain");
  });
  t.srv.Get("/hello", [](const http::Request&, http::Response& res) { res.set_content("hi", "text/plain"); });
  t.start();
  int idle = connect_to(t.port);
  send_all(idle, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(status_line(read_response(idle)) == "HTTP/1.1 200 OK");  // now idle between requests
  int busy = connect_to(t.port);
  send_all(busy, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
  for (int i = 0; i < 100 && !in_handler; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(in_handler);
  auto t0 = Clock::now();
  t.srv.stop();
  std::string r = read_response(busy);
  CHECK(status_line(r) == "HTTP/1.1 200 OK");
  CHECK(body_of(r) == "stored 5");
  CHECK(r.find("Connection: close") != std::string::npos);
  char c;
  pollfd p{idle, POLLIN, 0};
  REQUIRE(::poll(&p, 1, 2000) == 1);
  CHECK(::recv(idle, &c, 1, 0) <= 0);  // closed by the server, without a response
  t.thread.join();
  CHECK(Clock::now() - t0 < std::chrono::seconds(3));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(t.port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0);  // the listener is gone
  ::close(fd);
  ::close(idle);
  ::close(busy);
}
