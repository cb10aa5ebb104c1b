// The workspace client (core/client/client.h) against our real HTTP server on loopback, through our own
// HTTP/1.1 client (core/client/http1.h) and, where libcurl is installed, through libcurl too: both must give
// the same statuses, headers and bytes (libcurl is the reference). Chunked and fixed-length bodies, keep-alive
// and a server that closed an idle connection, long polls and timeouts, large uploads and downloads, refusals
// before the body, and responses a broken server sends (from a raw socket).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "core/client/client.h"
#include "core/client/http1.h"
#include "server/http/server.h"

using namespace air;
namespace http = air::server::http;
using Clock = std::chrono::steady_clock;

namespace {

struct Server {
  explicit Server(http::Limits limits = {}) : srv(limits) {}
  void start() {
    port = srv.bind("127.0.0.1", 0);
    REQUIRE(port > 0);
    thread = std::thread([this] { srv.listen(); });
  }
  ~Server() {
    srv.stop();
    if (thread.joinable()) thread.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  http::Server srv;
  int port = 0;
  std::thread thread;
};

// Sets AIR_HTTP_CLIENT for one scope: "" is ours, "curl" is libcurl.
struct Using {
  explicit Using(const std::string& which) {
    if (which.empty()) ::unsetenv("AIR_HTTP_CLIENT");
    else ::setenv("AIR_HTTP_CLIENT", which.c_str(), 1);
  }
  ~Using() { ::unsetenv("AIR_HTTP_CLIENT"); }
};

bool have_libcurl() {
  static const bool yes = [] {
    try {
      Using u("curl");
      Client c("http://127.0.0.1:1", "");
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }();
  return yes;
}

// The transports a test runs with: ours always, libcurl when it loads.
std::vector<std::string> transports() {
  std::vector<std::string> t{""};
  if (have_libcurl()) t.push_back("curl");
  return t;
}

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(g());
  return s;
}

std::string temp_dir() {
  char dir[] = "/tmp/air-http1-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  return dir;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A one-connection server on a raw socket that answers whatever it is given, for responses our server
// never sends. Answers the first request it reads (up to its blank line) with `reply`, then closes.
struct RawServer {
  explicit RawServer(std::string reply) : reply_(std::move(reply)) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    REQUIRE(::listen(fd, 4) == 0);
    thread = std::thread([this] {
      int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) return;
      std::string got;
      char buf[4096];
      while (got.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
      }
      ::send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~RawServer() {
    ::shutdown(fd, SHUT_RDWR);
    thread.join();
    ::close(fd);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  std::string reply_;
  int fd = -1, port = 0;
  std::thread thread;
};

}  // namespace

TEST_CASE("http client: URLs it serves, and the ones it leaves to libcurl", "[http_client]") {
  http1::Url u;
  REQUIRE(http1::parse_url("http://127.0.0.1:8470", u));
  CHECK((u.host == "127.0.0.1" && u.port == "8470" && u.prefix.empty() && u.host_header == "127.0.0.1:8470"));
  REQUIRE(http1::parse_url("HTTP://example.org/ws/", u));
  CHECK((u.host == "example.org" && u.port == "80" && u.prefix == "/ws"));
  REQUIRE(http1::parse_url("http://[::1]:9/", u));
  CHECK((u.host == "::1" && u.port == "9" && u.host_header == "[::1]:9"));
  for (const char* bad : {"https://127.0.0.1:8470", "http://", "http://:80", "http://h:0", "http://h:65536",
                          "http://h:8x", "http://user@h", "http://h/?q=1", "http://[::1", "ftp://h"})
    CHECK_FALSE(http1::parse_url(bad, u));

  ::unsetenv("AIR_HTTP_CLIENT");
  CHECK(make_plain_transport("http://127.0.0.1:8470") != nullptr);
  CHECK(make_plain_transport("https://127.0.0.1:8470") == nullptr);
  {
    Using u2("curl");
    CHECK(make_plain_transport("http://127.0.0.1:8470") == nullptr);
  }
  ::setenv("http_proxy", "http://proxy:3128", 1);
  CHECK(make_plain_transport("http://10.1.2.3:8470") == nullptr);  // libcurl honours the proxy
  CHECK(make_plain_transport("http://127.0.0.1:8470") != nullptr);  // loopback never goes through it
  ::unsetenv("http_proxy");
}

TEST_CASE("http client: JSON calls, headers and keep-alive on the real server", "[http_client]") {
  Server s;
  std::atomic<int> requests{0};
  std::string seen_auth, seen_type, seen_body;
  s.srv.Post("/api/echo", [&](const http::Request& req, http::Response& res) {
    ++requests;
    seen_auth = req.get_header_value("Authorization");
    seen_type = req.get_header_value("Content-Type");
    seen_body = req.body;
    res.set_header("X-Answer", "  42 ");
    res.set_content(R"({"got":)" + req.body + "}", "application/json");
  });
  s.srv.Get("/api/missing", [&](const http::Request&, http::Response& res) {
    res.status = 404;
    res.set_content(R"({"error":{"code":"NOT_FOUND","message":"no run 7","diagnostics":[]}})", "application/json");
  });
  s.srv.Get("/api/head", [&](const http::Request&, http::Response& res) { res.set_content("0123456789", "text/plain"); });
  s.srv.Put("/api/empty", [&](const http::Request& req, http::Response& res) {
    res.status = req.get_header_value("Content-Length") == "0" ? 204 : 400;
  });
  s.start();

  for (const auto& which : transports()) {
    DYNAMIC_SECTION("transport '" << which << "'") {
      Using use(which);
      Client c(s.url() + "/", "tok-123");
      auto j = c.post_json("/api/echo", {{"a", 1}});
      CHECK(j["got"]["a"] == 1);
      CHECK(seen_auth == "Bearer tok-123");
      CHECK(seen_type == "application/json");
      auto r = c.request("POST", "/api/echo", "[1,2]", "application/json");
      CHECK(r.status == 200);
      CHECK(r.header("x-answer") == "42");
      CHECK(r.header("content-type") == "application/json");
      CHECK(r.body == R"({"got":[1,2]})");
      // HEAD: the Content-Length of a body that is not sent; the next request on the connection still works.
      CHECK(c.head("/api/head"));
      CHECK_FALSE(c.head("/api/missing"));
      CHECK(c.request("PUT", "/api/empty").status == 204);
      try {
        c.get_json("/api/missing");
        FAIL("no ApiError");
      } catch (const ApiError& e) {
        CHECK(e.http_status() == 404);
        CHECK(e.code() == "NOT_FOUND");
        CHECK(std::string(e.what()) == "no run 7");
      }
      for (int i = 0; i < 50; ++i) CHECK(c.request("POST", "/api/echo", std::to_string(i)).body == "{\"got\":" + std::to_string(i) + "}");
    }
  }
  // A name, not an address: resolved, and each of its addresses tried (::1 may refuse, 127.0.0.1 answers).
  {
    ::unsetenv("AIR_HTTP_CLIENT");
    Client byname("http://localhost:" + std::to_string(s.port), "");
    CHECK(byname.request("POST", "/api/echo", "7").body == R"({"got":7})");
  }
  // Ours kept one connection for all of them.
  http1::Url u;
  REQUIRE(http1::parse_url(s.url(), u));
  http1::Connection conn(u);
  Transfer t;
  t.method = "POST";
  t.path = "/api/echo";
  t.body = "1";
  for (int i = 0; i < 20; ++i) CHECK(conn.perform(t, "").status == 200);
  t.method = "HEAD";
  t.path = "/api/head";
  t.body = {};
  CHECK(conn.perform(t, "").status == 200);
  t.method = "GET";
  CHECK(conn.perform(t, "").body == "0123456789");
  CHECK(conn.connects() == 1);
}

TEST_CASE("http client: chunked responses, long polls and timeouts", "[http_client]") {
  Server s;
  const std::string piece = random_bytes(70000, 1);  // over the client's 64 KiB buffer
  s.srv.Get("/chunks", [&](const http::Request& req, http::Response& res) {
    int n = std::stoi(req.get_param_value("n"));
    auto sent = std::make_shared<int>(0);
    res.set_chunked_content_provider("application/octet-stream", [&, n, sent](http::DataSink& sink) {
      if (*sent < n) sink.write(piece.data(), static_cast<size_t>(*sent % 7) * 10000 + 1);
      if (++*sent >= n) sink.done();
      return true;
    });
  });
  std::atomic<bool> ready{false};
  s.srv.Get("/poll", [&](const http::Request& req, http::Response& res) {
    int ms = std::stoi(req.get_param_value("ms"));
    res.defer(Clock::now() + std::chrono::milliseconds(ms), [&](http::Response& r) {
      r.set_content(ready ? "ready" : "nothing yet", "text/plain");
      return ready.load();
    });
  });
  s.start();

  std::string expect;
  for (int i = 0; i < 12; ++i) expect += piece.substr(0, static_cast<size_t>(i % 7) * 10000 + 1);
  for (const auto& which : transports()) {
    DYNAMIC_SECTION("transport '" << which << "'") {
      Using use(which);
      Client c(s.url(), "");
      auto r = c.request("GET", "/chunks?n=12");
      CHECK(r.status == 200);
      CHECK(r.header("transfer-encoding") == "chunked");
      CHECK(r.body.size() == expect.size());
      CHECK(r.body == expect);
      CHECK(c.request("GET", "/chunks?n=1").body == piece.substr(0, 1));
      // A long poll answered at its deadline, then one answered by a wake-up, on the same client.
      ready = false;
      CHECK(c.request("GET", "/poll?ms=150", {}, {}, 5000).body == "nothing yet");
      std::thread waker([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        ready = true;
        s.srv.wake();
      });
      CHECK(c.request("GET", "/poll?ms=10000", {}, {}, 8000).body == "ready");
      waker.join();
      // The client's timeout before the server's answer: a transport failure, and the client still works.
      ready = false;
      HttpResponse t = c.send("GET", "/poll?ms=3000", {}, {}, 200);
      CHECK(t.status == 0);
      CHECK(t.transport_error.find("timed out") != std::string::npos);
      try {
        c.request("GET", "/poll?ms=3000", {}, {}, 200);
        FAIL("no error");
      } catch (const ApiError&) {
        FAIL("an HTTP error instead of a transport one");
      } catch (const Error& e) {
        CHECK(std::string(e.what()).find("cannot reach workspace at " + s.url() + ": ") == 0);
      }
      CHECK(c.request("GET", "/chunks?n=3").status == 200);
    }
  }
}

TEST_CASE("http client: large uploads and downloads, a refusal before the body", "[http_client]") {
  Server s;
  const std::string blob = random_bytes(24 << 20, 2);
  s.srv.Get("/blob", [&](const http::Request&, http::Response& res) {
    res.set_content_provider(blob.size(), "application/octet-stream", [&](uint64_t off, uint64_t n, http::DataSink& sink) {
      sink.write(blob.data() + off, static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
      return true;
    });
  });
  std::string received;
  s.srv.Put("/up", [&](const http::Request&, http::Response& res, const http::ContentReader& read) {
    received.clear();
    bool ok = read([&](const char* d, size_t n) { return received.append(d, n), true; });
    res.status = ok ? 201 : 400;
    res.set_content(R"({"bytes":)" + std::to_string(received.size()) + "}", "application/json");
  }, {64u << 20, nullptr});
  s.srv.Put("/small", [&](const http::Request&, http::Response& res, const http::ContentReader& read) {
    read([&](const char*, size_t) { return true; });
    res.status = 201;
  }, {1 << 20, nullptr});
  s.srv.Get("/denied", [&](const http::Request&, http::Response& res) {
    res.status = 403;
    res.set_content(R"({"error":{"code":"PERMISSION_DENIED","message":"not yours"}})", "application/json");
  });
  s.start();
  std::string dir = temp_dir();
  {
    std::ofstream(dir + "/up.bin", std::ios::binary) << blob;
  }

  for (const auto& which : transports()) {
    DYNAMIC_SECTION("transport '" << which << "'") {
      Using use(which);
      Client c(s.url(), "t");
      uint64_t last = 0, total = 0;
      bool monotonic = true;
      ProgressFn progress = [&](uint64_t done, uint64_t all) {
        monotonic = monotonic && done >= last;
        last = done;
        total = all;
      };
      auto j = c.put_file("/up", dir + "/up.bin", progress);
      CHECK(j["bytes"] == blob.size());
      CHECK(received == blob);
      CHECK(monotonic);
      CHECK(last == blob.size());
      CHECK(total == blob.size());

      last = total = 0;
      c.get_to_file("/blob", dir + "/down.bin", progress);
      CHECK(read_file(dir + "/down.bin") == blob);
      CHECK(!std::filesystem::exists(dir + "/down.bin.part"));
      CHECK(monotonic);
      CHECK(last == blob.size());

      // An error's body goes to the message, not to the file; nothing is left behind.
      try {
        c.get_to_file("/denied", dir + "/denied.bin");
        FAIL("no error");
      } catch (const ApiError& e) {
        CHECK(e.http_status() == 403);
        CHECK(std::string(e.what()) == "not yours");
      }
      CHECK(!std::filesystem::exists(dir + "/denied.bin"));
      CHECK(!std::filesystem::exists(dir + "/denied.bin.part"));

      // 24 MiB against a 1 MiB limit: the server answers 413 from the Content-Length, before the body.
      try {
        c.put_file("/small", dir + "/up.bin");
        FAIL("no error");
      } catch (const ApiError& e) {
        CHECK(e.http_status() == 413);
      }
      CHECK(c.request("GET", "/denied").status == 403);  // the client goes on
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("http client: a server that closed the kept-alive connection, and one that is gone", "[http_client]") {
  http::Limits l;
  l.idle_timeout_ms = 150;
  auto s = std::make_unique<Server>(l);
  s->srv.Post("/x", [&](const http::Request& req, http::Response& res) { res.set_content(req.body, "text/plain"); });
  s->start();
  http1::Url u;
  REQUIRE(http1::parse_url(s->url(), u));
  http1::Connection conn(u);
  Transfer t;
  t.method = "POST";
  t.path = "/x";
  t.body = "one";
  CHECK(conn.perform(t, "").body == "one");
  CHECK(conn.perform(t, "").body == "one");
  CHECK(conn.connects() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // the server closes the idle connection
  t.body = "two";
  CHECK(conn.perform(t, "").body == "two");
  CHECK(conn.connects() == 2);

  std::string url = s->url();
  s.reset();  // nobody listens there any more
  for (const auto& which : transports()) {
    DYNAMIC_SECTION("transport '" << which << "'") {
      Using use(which);
      Client c(url, "");
      HttpResponse r = c.send("POST", "/x", "three");
      CHECK(r.status == 0);
      CHECK(r.transport_error == "connection refused");
      try {
        c.request("GET", "/x");
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(std::string(e.what()) == "cannot reach workspace at " + url + ": connection refused");
      }
    }
  }
}

TEST_CASE("http client: broken responses are transport errors, not data", "[http_client]") {
  struct Case {
    const char* reply;
    const char* error;  // what our client says
  } cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "connection closed before the response was complete"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc", "connection closed before the response was complete"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", "malformed chunk size"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcdeXX\r\n0\r\n\r\n",
       "malformed chunk: no line end after its data"},
      {"HTTP/1.1 200 OK\r\nContent-Length: x1\r\n\r\n", "malformed Content-Length 'x1'"},
      {"SSH-2.0-OpenSSH\r\n\r\n", "malformed response: 'SSH-2.0-OpenSSH'"},
      {"", "connection closed without a response"},
  };
  for (const auto& k : cases) {
    RawServer raw(k.reply);
    Client c(raw.url(), "");
    HttpResponse r = c.send("GET", "/", {}, {}, 3000);
    CHECK(r.status == 0);
    CHECK(r.transport_error == k.error);
    CHECK(r.body.empty());
  }
  // A body that ends with the connection (no length, no chunks) is whole; interim 1xx answers are skipped.
  {
    RawServer raw("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nX-A: b\r\n\r\nthe rest");
    Client c(raw.url(), "");
    HttpResponse r = c.send("GET", "/");
    CHECK(r.status == 200);
    CHECK(r.header("x-a") == "b");
    CHECK(r.body == "the rest");
  }
  // A request that cannot be written as one line is refused before anything is sent.
  Client c("http://127.0.0.1:1", "");
  CHECK(c.send("GET", "/a b").transport_error == "invalid request path '/a b'");
  Client bad("http://127.0.0.1:1", "tok\r\nX-Evil: 1");
  CHECK(bad.send("GET", "/").transport_error == "a header value holds a line break");
}

TEST_CASE("http client: https goes through libcurl, with the profile's CA file", "[http_client]") {
  if (!have_libcurl()) {
    WARN("skipped: libcurl cannot be loaded here");
    return;
  }
  std::string d = temp_dir();
  std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
                    d + "/k.pem -out " + d + "/c.pem >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    WARN("skipped: no openssl command");
    std::filesystem::remove_all(d);
    return;
  }
  {
    http::Server srv({}, http::TlsFiles{d + "/c.pem", d + "/k.pem"});
    srv.Post("/s", [](const http::Request& req, http::Response& res) { res.set_content("secure " + req.body, "text/plain"); });
    int port = srv.bind("127.0.0.1", 0);
    REQUIRE(port > 0);
    std::thread t([&] { srv.listen(); });
    std::string url = "https://127.0.0.1:" + std::to_string(port);
    CHECK(make_plain_transport(url) == nullptr);
    Client c(url, "tok", d + "/c.pem");
    CHECK(c.request("POST", "/s", "a", "text/plain").body == "secure a");
    CHECK(c.request("POST", "/s", "b", "text/plain").body == "secure b");
    // Without the CA file the certificate is not trusted: a transport error that says TLS.
    Client untrusted(url, "tok");
    HttpResponse r = untrusted.send("POST", "/s", "c");
    CHECK(r.status == 0);
    CHECK(r.transport_error.find("TLS") != std::string::npos);
    srv.stop();
    t.join();
  }
  std::filesystem::remove_all(d);
}
